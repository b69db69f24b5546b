// Serves the live view page: `/` and `/assets/*`. The bundle is built once per process on first
// request (esbuild, in development) or read from dist/web (images built with `npm run web:build`,
// which carry no esbuild).
import type http from 'node:http';
import type { Logger } from 'pino';
import { FROM_SOURCES } from '../config/index.js';
import { buildWebAssets, readPrebuiltAssets, type WebAssets } from '../web/index.js';
import { pathOf } from './http-front.js';

let assets: Promise<WebAssets> | null = null;

function loadAssets(logger: Logger): Promise<WebAssets> {
  // The built server serves the page built with it; the sources build theirs.
  const prebuiltFirst = FROM_SOURCES ? null : readPrebuiltAssets();
  if (prebuiltFirst) assets ??= Promise.resolve(prebuiltFirst);
  assets ??= buildWebAssets().catch((err) => {
    const prebuilt = readPrebuiltAssets();
    if (prebuilt) return prebuilt;
    logger.error({ err }, 'live view page: cannot build it (esbuild missing?) and dist/web has no prebuilt copy');
    assets = null;
    throw err;
  });
  return assets;
}

/** Answers the page's requests; false for any other path. */
export function serveWebPage(req: http.IncomingMessage, res: http.ServerResponse, logger: Logger): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const path = pathOf(req.url);
  const name = path === '/' ? 'index.html' : path.startsWith('/assets/') ? path.slice('/assets/'.length) : null;
  if (name === null) return false;
  loadAssets(logger).then(
    (files) => {
      const file = files.get(name);
      if (!file) return res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      res.writeHead(200, { 'content-type': file.contentType, 'cache-control': 'no-cache' }).end(req.method === 'HEAD' ? undefined : file.body);
    },
    () => res.writeHead(503, { 'content-type': 'text/plain' }).end('the live view page is not available on this server'),
  );
  return true;
}
