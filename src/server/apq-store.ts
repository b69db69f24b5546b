// The automatic persisted queries' store (Apollo's APQ protocol, @graphql-yoga/plugin-apq): a
// query's text kept under its sha256 so clients may send the hash alone. Anyone may register any
// text, so the store is bounded by what it holds, not only by how many: the plugin's own LRU of
// 1000 entries let 1,000 junk queries of 90 KB add ~100 MB of RSS. Least recently used entries go
// first once either bound is passed.
import type { APQStore } from '@graphql-yoga/plugin-apq';

export interface ByteBoundedApqStore extends APQStore {
  get(key: string): string | undefined;
  set(key: string, query: string): void;
  /** What the store holds now: bytes (its keys and texts, as UTF-16 in memory) and entries. */
  size(): { bytes: number; entries: number };
}

/** Bytes a string takes in memory (V8 keeps most as one byte a character, some as two: the bound counts two). */
const bytesOf = (s: string) => s.length * 2;

export function createByteBoundedApqStore(maxBytes: number, maxEntries = 1000): ByteBoundedApqStore {
  // A Map keeps insertion order: re-inserting on a hit makes its first key the least recently used.
  const entries = new Map<string, string>();
  let bytes = 0;
  const drop = (key: string) => {
    const query = entries.get(key);
    if (query === undefined) return;
    entries.delete(key);
    bytes -= bytesOf(key) + bytesOf(query);
  };
  return {
    get(key) {
      const query = entries.get(key);
      if (query === undefined) return undefined;
      entries.delete(key);
      entries.set(key, query);
      return query;
    },
    set(key, query) {
      drop(key);
      const cost = bytesOf(key) + bytesOf(query);
      // A text bigger than the whole budget is not kept: the client sends it again with its hash.
      if (cost > maxBytes) return;
      entries.set(key, query);
      bytes += cost;
      while (bytes > maxBytes || entries.size > maxEntries) drop(entries.keys().next().value as string);
    },
    size: () => ({ bytes, entries: entries.size }),
  };
}
