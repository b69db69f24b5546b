import { DomainError } from '../domain/errors.js';
import { parseGlobalId } from '../domain/ids.js';
import { builder } from './builder.js';
import { reportStale } from './staleness.js';
import { JobConnectionRef, jobConnectionArgs, resolveJobConnection } from './job-connection.js';
import { ProviderRef } from './provider.js';
import { NodeInterfaceRef, ProjectRef } from './refs.js';

ProjectRef.implement({
  interfaces: [NodeInterfaceRef],
  description: 'A group of jobs on one platform: a Baseten project, a ModelArts or PAI-DLC workspace, a Lens namespace, a Runicorn path',
  fields: (t) => ({
    id: t.exposeID('id', { description: 'Global id, `<providerId>:project:<platform project id>`; stable across restarts' }),
    externalId: t.exposeString('externalId', { description: "The platform's own id for the project" }),
    name: t.exposeString('name', { description: "The project's name on the platform" }),
    provider: t.field({
      type: ProviderRef,
      description: 'The platform the project is on',
      resolve: (p, _a, ctx) => ctx.store.providers.require(p.providerId),
    }),
    jobs: t.field({
      type: JobConnectionRef,
      description: "This project's jobs as a Relay connection, newest first",
      directives: { listSize: { assumedSize: 50, slicingArguments: ['first', 'last'], sizedFields: ['edges', 'nodes'], requireOneSlicingArgument: false } },
      args: jobConnectionArgs(t.arg),
      resolve: async (p, args, ctx, info) => reportStale(ctx, info, await resolveJobConnection(ctx, args, info, p.id)),
    }),
  }),
});

builder.queryFields((t) => ({
  projects: t.field({
    type: [ProjectRef],
    description: 'Every project of every configured platform (or of one), learnt from their job lists; at most a few thousand, unpaged',
    args: { providerId: t.arg.id({ required: false, description: "Only this provider's projects (its id from the providers file); default: all" }) },
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
    description: 'One project by its id; a NOT_FOUND error when there is none',
    args: { id: t.arg.id({ required: true, description: 'A Project id (`<providerId>:project:<platform project id>`)' }) },
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
