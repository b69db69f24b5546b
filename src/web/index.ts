// The live view page's door for server/: its bundle, built on request from the sources or read
// prebuilt from dist/web. The page's own code starts at app.ts and runs in the browser.
export { buildWebAssets, readPrebuiltAssets, type WebAssets } from './build.js';
