// The page's address: `#job=<id>` opens a job, `#fleet?provider=<id>&project=<id>&sort=<key>`
// the fleet view; anything else is the fleet view unfiltered. Every view change is a new history
// entry (location.hash), so back and forward walk the views and a copied URL opens the same one.
export type FleetSort = 'waste' | 'cost' | 'utilization' | 'gpus' | 'name' | 'platform';
export const FLEET_SORTS: readonly FleetSort[] = ['waste', 'cost', 'utilization', 'gpus', 'name', 'platform'];

export type Route = { view: 'job'; jobId: string } | { view: 'fleet'; provider: string | null; project: string | null; sort: FleetSort; descending: boolean };

export function parseRoute(hash: string): Route {
  const h = hash.replace(/^#/, '');
  if (h.startsWith('job=')) {
    const jobId = new URLSearchParams(h).get('job') ?? '';
    if (jobId) return { view: 'job', jobId };
  }
  const params = new URLSearchParams(h.startsWith('fleet') ? h.slice('fleet'.length).replace(/^\?/, '') : '');
  const sort = params.get('sort') as FleetSort | null;
  return {
    view: 'fleet',
    provider: params.get('provider') || null,
    project: params.get('project') || null,
    sort: sort && FLEET_SORTS.includes(sort) ? sort : 'waste',
    descending: params.get('dir') !== 'asc',
  };
}

export function formatRoute(route: Route): string {
  if (route.view === 'job') return `#job=${encodeURIComponent(route.jobId)}`;
  const params = new URLSearchParams();
  if (route.provider) params.set('provider', route.provider);
  if (route.project) params.set('project', route.project);
  if (route.sort !== 'waste') params.set('sort', route.sort);
  if (!route.descending) params.set('dir', 'asc');
  const q = params.toString();
  return q ? `#fleet?${q}` : '#fleet';
}
