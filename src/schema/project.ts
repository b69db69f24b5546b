import { DomainError } from '../domain/errors.js';
import { parseGlobalId } from '../domain/ids.js';
import { builder } from './builder.js';
import { JobConnectionRef, resolveJobConnection } from './job-connection.js';
import { JobFilterRef } from './job-filter.js';
import { ProviderRef } from './provider.js';
import { ProjectRef } from './refs.js';

ProjectRef.implement({
  description: 'A group of jobs on one platform: a Baseten project, a ModelArts or PAI-DLC workspace, a Lens namespace, a Runicorn path',
  fields: (t) => ({
    id: t.exposeID('id'),
    externalId: t.exposeString('externalId', { description: "The platform's own id for the project" }),
    name: t.exposeString('name'),
    provider: t.field({
      type: ProviderRef,
      resolve: (p, _a, ctx) => ctx.store.providers.require(p.providerId),
    }),
    jobs: t.field({
      type: JobConnectionRef,
      args: {
        filter: t.arg({ type: JobFilterRef, required: false }),
        first: t.arg.int({ required: false }),
        after: t.arg.string({ required: false }),
      },
      resolve: (p, args, ctx) => resolveJobConnection(ctx, args, p.id),
    }),
  }),
});

builder.queryFields((t) => ({
  projects: t.field({
    type: [ProjectRef],
    args: { providerId: t.arg.id({ required: false }) },
    resolve: async (_r, args, ctx) => {
      const ids = args.providerId != null ? ctx.store.providers.ids().filter((id) => id === String(args.providerId)) : ctx.store.providers.ids();
      await ctx.store.syncJobLists(ids);
      const projects = await ctx.store.projectsOf(ids);
      return ctx.access ? projects.filter((p) => ctx.access!.allowsProject(p.id)) : projects;
    },
  }),
  project: t.field({
    type: ProjectRef,
    nullable: true,
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_r, args, ctx) => {
      const id = String(args.id);
      const { providerId } = parseGlobalId(id, 'project');
      let project = await ctx.store.loaders.projectById.load(id);
      if (!project && ctx.store.providers.find(providerId)) {
        await ctx.store.syncJobLists([providerId]);
        ctx.store.loaders.projectById.clear(id);
        project = await ctx.store.loaders.projectById.load(id);
      }
      if (!project) throw new DomainError('NOT_FOUND', `no project with id "${id.slice(0, 200)}"`);
      return project;
    },
  }),
}));
