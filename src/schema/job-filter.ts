// JobFilter: the input every job list takes, resolved against the configured providers.
import { DomainError } from '../domain/errors.js';
import { parseGlobalId } from '../domain/ids.js';
import type { JobStatus, ProviderKind } from '../domain/types.js';
import type { JobFilter } from '../store/index.js';
import { builder } from './builder.js';
import type { Context } from './context.js';
import { JobStatusFilterEnum, ProviderKindEnum } from './enums.js';

export interface JobFilterInput {
  providerIds?: readonly (string | number)[] | null;
  kinds?: readonly ProviderKind[] | null;
  statuses?: readonly JobStatus[] | null;
  projectId?: string | number | null;
  nameContains?: string | null;
}

export const JobFilterRef = builder.inputRef<JobFilterInput>('JobFilter').implement({
  description: 'All given conditions must hold',
  fields: (t) => ({
    providerIds: t.idList({ required: false, description: 'Only jobs of these providers (ids from the providers file); default: all' }),
    kinds: t.field({ type: [ProviderKindEnum], required: false, description: 'Only jobs on these platforms; default: all' }),
    statuses: t.field({ type: [JobStatusFilterEnum], required: false, description: 'Only jobs in these statuses; default: any' }),
    projectId: t.id({ required: false, description: 'Only jobs of this project (a Project id); default: any' }),
    nameContains: t.string({ required: false, description: 'Case-insensitive substring of the job name, at most 200 characters; default: any name' }),
  }),
});

export interface ResolvedFilter {
  /** The providers whose jobs can match (and whose lists must be fresh). */
  providerIds: string[];
  jobs: JobFilter;
}

export function resolveJobFilter(ctx: Context, filter: JobFilterInput | null | undefined, projectId?: string): ResolvedFilter {
  let ids = ctx.store.providers.ids();
  if (filter?.providerIds) {
    const wanted = new Set(filter.providerIds.map(String));
    ids = ids.filter((id) => wanted.has(id));
  }
  if (filter?.kinds) {
    const kinds = new Set(filter.kinds);
    ids = ids.filter((id) => kinds.has(ctx.store.providers.find(id)!.kind));
  }
  const project = projectId ?? (filter?.projectId != null ? String(filter.projectId) : null);
  if (project) {
    const pid = parseGlobalId(project, 'project').providerId;
    ids = ids.filter((id) => id === pid);
  }
  if (filter?.nameContains != null && filter.nameContains.length > 200) {
    throw new DomainError('BAD_INPUT', '"nameContains" is longer than 200 characters', { argument: 'nameContains' });
  }
  return {
    providerIds: ids,
    jobs: {
      providerIds: ids,
      statuses: filter?.statuses ?? null,
      projectId: project,
      nameContains: filter?.nameContains || null,
      projectIds: ctx.access?.projectIds() ?? null,
    },
  };
}
