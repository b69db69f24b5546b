// The floors of the load bench, in their own process: what the same answers cost without our
// per-request path. `POST /list` and `POST /page` read the same rows in one SQL statement and
// write the same JSON over plain node:http; `POST /graphql` is a bare graphql-yoga with the same
// `providers { id name }` resolver (answered from memory, as ours is).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSchema, createYoga } from 'graphql-yoga';
import { answerProfileCommand, type ProfileCommand } from './profile-commands.js';

export interface FloorOptions {
  databaseUrl: string | null;
  dataDir: string;
  providers: { id: string; name: string }[];
}

const opts = JSON.parse(process.argv[2]!) as FloorOptions;

type Query = (text: string, params: unknown[]) => Promise<Record<string, any>[]>;
let query: Query;
let close: () => Promise<void>;
if (opts.databaseUrl) {
  const { default: postgres } = await import('postgres');
  const sql = postgres(opts.databaseUrl, { max: 10, onnotice: () => {}, connection: { jit: 'off' } });
  query = (text, params) => sql.unsafe(text, params as never[]);
  close = () => sql.end();
} else {
  const { PGlite } = await import('@electric-sql/pglite');
  const db = new PGlite(opts.dataDir);
  query = async (text, params) => (await db.query<Record<string, any>>(text, params)).rows;
  close = () => db.close();
}

const LIST_SQL = `select j.id, j.name, j.status, p.kind from jobs j join providers p on p.id = j.provider_id
  order by j.sort_at desc, j.id desc limit $1`;

const PAGE_SQL = `select j.id, j.name, j.status, n.name as node_name, g.idx,
    array_agg(p.ts order by p.key) as ts, array_agg(p.value order by p.key) as vals
  from jobs j join nodes n on n.job_id = j.id join gpus g on g.node_id = n.id
    join series s on s.gpu_id = g.id and s.kind = 'system' and s.name = 'GPU_UTILIZATION'
    join points p on p.series_id = s.id
  where j.id = $1
  group by j.id, j.name, j.status, n.name, n.ord, g.idx
  order by n.ord, g.idx`;

const pgArray = (v: unknown): unknown[] =>
  Array.isArray(v)
    ? v
    : String(v)
        .slice(1, -1)
        .split(',')
        .map((s) => s.replace(/^"|"$/g, ''));

async function readBody(req: http.IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function list(body: any): Promise<unknown> {
  const first: number = body.variables?.first ?? 20;
  const rows = await query(LIST_SQL, [first + 1]);
  const edges = rows.slice(0, first).map((r) => ({ node: { id: r.id, name: r.name, status: r.status, provider: { kind: r.kind } } }));
  return { data: { jobs: { edges } } };
}

async function page(body: any): Promise<unknown> {
  const rows = await query(PAGE_SQL, [body.variables.id]);
  if (rows.length === 0) return { data: { job: null } };
  const job = { id: rows[0]!.id, name: rows[0]!.name, status: rows[0]!.status, nodes: [] as any[] };
  let node: any = null;
  for (const r of rows) {
    if (node?.name !== r.node_name) job.nodes.push((node = { name: r.node_name, gpus: [] }));
    const ts = pgArray(r.ts);
    const vals = pgArray(r.vals).map(Number);
    node.gpus.push({
      index: r.idx,
      utilization: { points: ts.map((t, i) => ({ timestamp: new Date(t as string).toISOString(), value: vals[i] })) },
    });
  }
  return { data: { job } };
}

const yoga = createYoga({
  logging: false,
  landingPage: false,
  // As the server runs yoga: its body limit off (the server caps bodies in its own plugin, which
  // the floor does without), so the floor is the least a yoga request can cost.
  maxRequestBodySize: false,
  schema: createSchema({
    typeDefs: 'type Query { providers: [Provider!]! } type Provider { id: ID! name: String! }',
    resolvers: { Query: { providers: () => opts.providers } },
  }),
});

const routes: Record<string, (body: any) => Promise<unknown>> = { '/list': list, '/page': page };

const server = http.createServer((req, res) => {
  const route = routes[req.url ?? ''];
  if (!route) return void yoga(req, res);
  readBody(req)
    .then(route)
    .then((answer) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer)))
    .catch((err) => res.writeHead(500).end(String(err)));
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.send!({ ready: true, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
process.on('message', (m: ProfileCommand) => {
  if (answerProfileCommand(m)) return;
  if (m.cmd === 'cpu') {
    const u = process.cpuUsage();
    process.send!({ id: m.id, cpuUs: u.user + u.system });
  }
  if (m.cmd === 'close') server.close(() => void close().then(() => process.exit(0)));
});
