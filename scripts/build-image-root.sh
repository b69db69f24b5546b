#!/usr/bin/env bash
# `npm run build:image-root [folder]`: the Dockerfile's build steps without a Docker engine. Writes
# the image's /app into a folder (default $TMPDIR/training-graph-image-root): dist/ from the build stage, the
# production node_modules of the deps stage (npm ci --omit=dev --omit=optional: no PGlite, no
# TypeScript tooling), package.json and migrations/. `node dist/main.js` there is the image's CMD;
# test/deploy/built-server.test.ts starts it. Prints the folder's sizes.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# Outside the checkout: Node looks for packages in every parent folder, and the checkout's own
# node_modules (with PGlite and the dev tools) would stand in for whatever the image lacks.
out="${1:-${TMPDIR:-/tmp}/training-graph-image-root}"
mkdir -p "$out" && out="$(cd "$out" && pwd)"
case "$out/" in "$root/"*) echo "build-image-root: $out is inside the checkout $root; give a folder outside it" >&2; exit 2 ;; esac

# Two runs of one checkout (a PGlite and a Postgres test run side by side) share this folder: one
# build at a time (else one's npm ci or rm -rf empties what the other is installing or starting),
# and dist/ is swapped in whole, so a server started from it never finds it half written or gone.
exec 9>"$out/.build-lock"
flock 9

# build stage (this checkout's own full install stands in for its npm ci)
rm -rf "$out"/dist.new.* "$out"/dist.old.*
node "$root/scripts/build.mjs" "$out/dist.new.$$"
if [ -d "$out/dist" ]; then mv "$out/dist" "$out/dist.old.$$"; fi
mv "$out/dist.new.$$" "$out/dist" && rm -rf "$out/dist.old.$$"

# deps stage; skipped when the folder already holds an install of this very lockfile
cp "$root/package.json" "$root/package-lock.json" "$out/"
rm -rf "$out/patches" "$out/patches-optional" && cp -r "$root/patches" "$root/patches-optional" "$out/"
mkdir -p "$out/scripts" && cp "$root/scripts/apply-patches.mjs" "$root/scripts/pglite-template.mjs" "$out/scripts/"
stamp="$(cat "$root/package-lock.json" "$root"/patches/* "$root"/patches-optional/* "$root/scripts/apply-patches.mjs" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$out/node_modules/.installed-stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$out/node_modules"
  (cd "$out" && npm ci --omit=dev --omit=optional --prefer-offline --no-audit --no-fund --loglevel=error)
  echo "$stamp" > "$out/node_modules/.installed-stamp"
fi

# runtime stage
rm -rf "$out/migrations.new" && cp -r "$root/migrations" "$out/migrations.new" && rm -rf "$out/migrations" && mv "$out/migrations.new" "$out/migrations"
echo "image root: $out"
for f in "$out/dist" "$out/node_modules" "$out"; do du -sh "$f"; done
