// Object refs of the mutually referencing types, declared before any is implemented (TS7022).
import type { GpuRow, JobRow, NodeRow, ProjectRow } from '../store/index.js';
import { builder } from './builder.js';

export const ProjectRef = builder.objectRef<ProjectRow>('Project');
export const JobRef = builder.objectRef<JobRow>('Job');
export const NodeRef = builder.objectRef<NodeRow>('Node');
export const GpuRef = builder.objectRef<GpuRow>('Gpu');
