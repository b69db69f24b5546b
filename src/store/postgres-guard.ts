// Keeps the server process alive through one known postgres.js defect, and only that one.
//
// postgres.js 3.4.9 (the newest release) batches small protocol writes behind setImmediate(nextWrite).
// When Postgres drops a backend (pg_terminate_backend, a restart, a failover), closed() sets the
// connection's socket to null; a write queued in that window then runs socket.write on null from the
// immediate, where no caller can catch it: an uncaughtException that ends the process
// (porsager/postgres#1154, #1208; fixes proposed in #1168, #1176, #1209, none released).
// Swallowing it loses nothing we rely on: the query whose bytes were in that write sits in the
// connection's active/sent list, which the close handling already rejected with CONNECTION_CLOSED,
// so its caller sees an error; the read-through then serves what is cached (stale) or reports the
// field as unavailable, and the next request fetches again on a reconnected connection.
// Every other uncaught exception keeps Node's semantics: logged, then exit code 1.
import type { Logger } from 'pino';

export const POSTGRES_LOST_WRITE_ISSUE = 'https://github.com/porsager/postgres/issues/1154';

const NULL_SOCKET_WRITE = "Cannot read properties of null (reading 'write')";
// The first stack frame: postgres.js's own nextWrite, in its ESM (src/) or CommonJS (cjs/src/) build.
const NEXT_WRITE_FRAME = /^\s*at (?:Immediate\.)?nextWrite \((?:file:\/\/)?.*[\\/]postgres[\\/](?:cjs[\\/])?src[\\/]connection\.js:\d+:\d+\)$/;

/** True only for postgres.js's write on a socket its close handling already dropped. */
export function isPostgresLostWrite(err: unknown): boolean {
  if (!(err instanceof TypeError) || err.message !== NULL_SOCKET_WRITE || typeof err.stack !== 'string') return false;
  const topFrame = err.stack.split('\n').find((line) => /^\s*at /.test(line));
  return topFrame !== undefined && NEXT_WRITE_FRAME.test(topFrame);
}

/**
 * For the server process only (src/main.ts with DATABASE_URL): a process-wide handler changes what
 * every uncaught exception does, which library code and in-process tests must not do.
 */
export function installPostgresLostWriteGuard(logger: Logger): void {
  let swallowed = 0;
  process.on('uncaughtException', (err, origin) => {
    if (isPostgresLostWrite(err)) {
      swallowed++;
      logger.warn({ issue: POSTGRES_LOST_WRITE_ISSUE, swallowed }, 'postgres.js wrote to a closed connection; its query was already rejected, continuing');
      return;
    }
    logger.fatal({ err, origin }, 'uncaught exception');
    // pino writes synchronously to stdout by default, so the line is out before the exit.
    process.exit(1);
  });
}
