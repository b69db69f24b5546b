// The live view page's bundle: built by esbuild from src/web with uPlot and the graphql-ws client
// inside (no CDN), and readable back from a prebuilt folder the way the Docker image serves it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ASSET_NAMES, buildWebAssets, readPrebuiltAssets } from '../../src/web/build.js';

describe('live view page bundle', () => {
  it('bundles the page, uPlot and graphql-ws into app.js and app.css, referencing only its own server', async () => {
    const assets = await buildWebAssets();
    expect([...assets.keys()].sort()).toEqual(Object.keys(ASSET_NAMES).sort());
    const html = String(assets.get('index.html')!.body);
    expect(html).toContain('<script type="module" src="/assets/app.js">');
    expect(html).toContain('href="/assets/app.css"');
    expect(html).not.toMatch(/(src|href)="https?:/);
    const js = Buffer.from(assets.get('app.js')!.body).toString('utf8');
    expect(js).toContain('jobUtilization'); // the subscription
    expect(js).toContain('graphql-transport-ws'); // graphql-ws's protocol, bundled
    expect(js).toMatch(/u-legend/); // uPlot, bundled
    expect(Buffer.from(assets.get('app.css')!.body).toString('utf8')).toContain('.uplot');
  });

  it('reads a prebuilt copy (npm run web:build) back whole, and reports none when it is missing', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tg-web-'));
    try {
      const built = await buildWebAssets();
      for (const [name, asset] of built) writeFileSync(path.join(dir, name), asset.body);
      const prebuilt = readPrebuiltAssets(dir)!;
      for (const [name, asset] of built) {
        expect(Buffer.from(prebuilt.get(name)!.body).equals(Buffer.from(asset.body))).toBe(true);
        expect(prebuilt.get(name)!.contentType).toBe(ASSET_NAMES[name]);
      }
      expect(readPrebuiltAssets(path.join(dir, 'missing'))).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
