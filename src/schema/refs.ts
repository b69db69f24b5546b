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
  /**
   * The id of what failed, which the error's id is derived from: a Freshness, a ProviderHealth, a
   * Provider (its job list), or a Fleet (with `job`: one of the fleet's problems).
   */
  ownerId: string;
  /** Set when Query.node answered it: the id asked. */
  id?: string;
}
export const SourceErrorRef = builder.objectRef<SourceErrorShape>('SourceError');

/**
 * Relay's Node: every object with a global id implements it, so Query.node can refetch any of them.
 * Entities carry their id; values compute theirs from their owner when it is selected, and carry it
 * only as Query.node answers them (which is the only place the interface's type is resolved).
 */
export interface NodeShape {
  id?: string;
}
export const NodeInterfaceRef = builder.interfaceRef<NodeShape>('Node');
