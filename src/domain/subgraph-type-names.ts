// SUBGRAPH_TYPE_NAMES: "JobStatus:TrainingJobStatus,Other:NewName", the names some of this
// server's types take in the Federation subgraph SDL only (src/schema/subgraph-names.ts says which
// types may take one). Syntax alone here; the schema checks the rest when the server starts.

const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;

/** Type name -> name in the subgraph SDL; throws an Error naming the entry at fault. */
export function parseSubgraphTypeNames(text: string): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const raw of text.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const parts = entry.split(':').map((p) => p.trim());
    if (parts.length !== 2 || !GRAPHQL_NAME.test(parts[0]!) || !GRAPHQL_NAME.test(parts[1]!)) {
      throw new Error(`SUBGRAPH_TYPE_NAMES: "${entry}" is not Type:NewName (two GraphQL names separated by a colon)`);
    }
    const [from, to] = parts as [string, string];
    if (from === to) throw new Error(`SUBGRAPH_TYPE_NAMES: "${entry}" renames ${from} to itself`);
    if (names.has(from)) throw new Error(`SUBGRAPH_TYPE_NAMES: ${from} is renamed twice`);
    if (taken.has(to)) throw new Error(`SUBGRAPH_TYPE_NAMES: two types would be named ${to}`);
    names.set(from, to);
    taken.add(to);
  }
  return names;
}
