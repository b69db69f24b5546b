// Object refs of the mutually referencing types, declared before any is implemented (TS7022).
import type { GpuRow, JobRow, NodeRow, ProjectRow, ProviderView } from '../store/index.js';
import { builder } from './builder.js';

export const ProviderRef = builder.objectRef<ProviderView>('Provider');
export const ProjectRef = builder.objectRef<ProjectRow>('Project');
export const JobRef = builder.objectRef<JobRow>('Job');
export const ComputeNodeRef = builder.objectRef<NodeRow>('ComputeNode');
export const GpuRef = builder.objectRef<GpuRow>('Gpu');

/** What one failed upstream call did to an answer; the path of the field that carries it says where. */
export interface SourceErrorShape {
  code: string;
  message: string;
  /** True when an older cached copy is served in its place. */
  stale: boolean;
  providerId?: string | null;
  job?: JobRow | null;
  /** When the copy served in its place was fetched. */
  cachedAt?: Date | null;
}
export const SourceErrorRef = builder.objectRef<SourceErrorShape>('SourceError');

/** Relay's Node: every object with a global id implements it, so Query.node can refetch any of them. */
export const NodeInterfaceRef = builder.interfaceRef<{ id: string }>('Node');
