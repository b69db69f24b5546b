// Every GraphQL block of the README and of docs/**/*.md, fenced or indented (issue 45: the fleet
// example was an indented block, asked for a renamed field, and no test noticed).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export interface DocBlock {
  /** Repository-relative file and 1-based line of the block's first line. */
  where: string;
  source: string;
}

const ROOT = path.resolve(import.meta.dirname, '../..');
// A block is GraphQL when its fence says so or its first word is one GraphQL starts with; the
// other indented blocks (YAML, shell) start otherwise. Parsing is not the test: a broken GraphQL
// block must fail, not be taken for prose.
const GRAPHQL_START = /^\s*(\{|query\b|mutation\b|subscription\b|fragment\b|type\b|extend\b|interface\b|input\b|enum\b|union\b|scalar\b|directive\b|schema\b)/;

export function docFiles(): string[] {
  const files = ['README.md'];
  const walk = (dir: string) => {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.posix.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.md')) files.push(rel);
    }
  };
  if (existsSync(path.join(ROOT, 'docs'))) walk('docs');
  return files;
}

/** CommonMark's two code block kinds, as far as our docs use them: ``` fences and blocks indented 4 spaces after a blank line. */
export function graphqlBlocks(markdown: string, file: string): DocBlock[] {
  const lines = markdown.split('\n');
  const blocks: DocBlock[] = [];
  let fence: { lang: string; start: number; lines: string[] } | null = null;
  let indented: { start: number; lines: string[] } | null = null;
  let prevBlank = true;
  const take = (lang: string, start: number, body: string[]) => {
    const source = body.join('\n').trim();
    if (/^(graphql|gql)$/i.test(lang) || (lang === '' && GRAPHQL_START.test(source))) blocks.push({ where: `${file}:${start}`, source });
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fenceMark = /^\s*```\s*(\S*)/.exec(line);
    if (fence) {
      if (fenceMark) {
        take(fence.lang, fence.start, fence.lines);
        fence = null;
        prevBlank = false;
      } else fence.lines.push(line);
      continue;
    }
    if (indented) {
      if (/^ {4}/.test(line) || line.trim() === '') {
        indented.lines.push(line);
        continue;
      }
      take('', indented.start, indented.lines);
      indented = null;
    }
    if (fenceMark) {
      fence = { lang: fenceMark[1] ?? '', start: i + 1, lines: [] };
      continue;
    }
    if (/^ {4}/.test(line) && prevBlank) {
      indented = { start: i + 1, lines: [line] };
      continue;
    }
    prevBlank = line.trim() === '';
  }
  if (indented) take('', indented.start, indented.lines);
  return blocks;
}

/** The ```promql fences: expressions a reader pastes into Grafana or promtool, run by a test against the query API. */
export function promqlBlocks(markdown: string, file: string): DocBlock[] {
  const out: DocBlock[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*```promql\s*$/.test(lines[i]!)) continue;
    const start = i + 1;
    const body: string[] = [];
    while (++i < lines.length && !/^\s*```/.test(lines[i]!)) body.push(lines[i]!);
    out.push({ where: `${file}:${start}`, source: body.join('\n').trim() });
  }
  return out;
}

export function allPromqlBlocks(): DocBlock[] {
  return docFiles().flatMap((f) => promqlBlocks(readFileSync(path.join(ROOT, f), 'utf8'), f));
}

/** Each line of the ```sh fences that hold only `curl` commands: requests a reader sends to the demo server. */
export function curlCommands(markdown: string, file: string): DocBlock[] {
  const out: DocBlock[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*```(sh|bash|shell)\s*$/.test(lines[i]!)) continue;
    const body: { line: number; text: string }[] = [];
    while (++i < lines.length && !/^\s*```/.test(lines[i]!)) if (lines[i]!.trim()) body.push({ line: i + 1, text: lines[i]!.trim() });
    if (body.length > 0 && body.every((l) => l.text.startsWith('curl '))) {
      for (const l of body) out.push({ where: `${file}:${l.line}`, source: l.text });
    }
  }
  return out;
}

export interface CurlRequest {
  url: URL;
  headers: Record<string, string>;
}

/**
 * The request a documented curl command sends, for the few options the docs use (`-s`, `-G`,
 * `-H`, `--data-urlencode`); anything else is refused, so a new option gets handled here rather than ignored.
 */
export function parseCurl(command: string): CurlRequest {
  const words = [...command.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
  if (words.shift() !== 'curl') throw new Error(`not a curl command: ${command}`);
  let url: URL | null = null;
  const headers: Record<string, string> = {};
  const data: string[] = [];
  while (words.length > 0) {
    const w = words.shift()!;
    if (w === '-s' || w === '-G') continue;
    if (w === '-H') {
      const [name, ...value] = words.shift()!.split(':');
      headers[name!.trim().toLowerCase()] = value.join(':').trim();
    } else if (w === '--data-urlencode') {
      const [k, ...v] = words.shift()!.split('=');
      data.push(`${encodeURIComponent(k!)}=${encodeURIComponent(v.join('='))}`);
    } else if (/^https?:\/\//.test(w)) url = new URL(w);
    else throw new Error(`curl option ${w} is not understood by test/contract/doc-blocks.ts: ${command}`);
  }
  if (!url) throw new Error(`no URL in ${command}`);
  if (data.length > 0) url.search = [url.search.slice(1), ...data].filter(Boolean).join('&');
  return { url, headers };
}

export function allCurlCommands(): DocBlock[] {
  return docFiles().flatMap((f) => curlCommands(readFileSync(path.join(ROOT, f), 'utf8'), f));
}

export function allDocBlocks(): DocBlock[] {
  return docFiles().flatMap((f) => graphqlBlocks(readFileSync(path.join(ROOT, f), 'utf8'), f));
}
