// The offline copy's service worker, generated with Workbox after every build:
//   node sitebuild/service_worker.mjs SITE_DIR
// precaches every file of SITE_DIR (pages, search index, vendored Pyodide, plotly.js, KaTeX, the
// simulators) under a cache named after this build's content, writes SITE_DIR/sw.js and
// SITE_DIR/offline.json ({ version, files, bytes }) for assets/js/offline.js. A new build gets a
// new cache; Workbox deletes the old one when the new worker activates, which happens only once no
// tab still runs the old build (no skipWaiting), so a page never mixes two builds.
import { createHash } from "node:crypto";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generateSW, getManifest } from "workbox-build";

const siteDir = process.argv[2];
const common = {
  globDirectory: siteDir,
  globPatterns: ["**/*"],
  // Everything a reader loads; instant navigation reads sitemap.xml to tell site links from others.
  // Not the build's .gz copies (a compressing host sends them in place of the file itself), except
  // the WebAssembly's, which the Python worker fetches and inflates itself instead of the raw .wasm.
  globIgnores: ["sw.js", "**/*.map", "**/pyodide.asm.wasm"],
  manifestTransforms: [
    (entries) => ({
      manifest: entries.filter(
        (e) => !(e.url.endsWith(".gz") && !e.url.endsWith("pyodide.asm.wasm.gz") && existsSync(join(siteDir, e.url.slice(0, -3)))),
      ),
      warnings: [],
    }),
  ],
  maximumFileSizeToCacheInBytes: 64 * 1024 * 1024, // Pyodide's wasm is about 10 MB
  // Hashed file names (assets/generated/*-<12 hex>.*) need no revision parameter.
  dontCacheBustURLsMatching: /-[0-9a-f]{12}\.[a-z]+$/,
};

const listed = await getManifest({ ...common, globIgnores: [...common.globIgnores, "offline.json"] });
const digest = createHash("sha256");
for (const entry of listed.manifestEntries) digest.update(`${entry.url} ${entry.revision}\n`);
const version = digest.digest("hex").slice(0, 12);
const bytes = listed.size + 200; // offline.json itself, written next
writeFileSync(join(siteDir, "offline.json"), JSON.stringify({ version, files: listed.count + 1, bytes }));

const done = await generateSW({
  ...common,
  swDest: join(siteDir, "sw.js"),
  cacheId: `llm-course-offline-${version}`,
  cleanupOutdatedCaches: true,
  clientsClaim: true, // the first install serves the page that asked for it at once
  skipWaiting: false, // an update waits until no tab shows the old build
  inlineWorkboxRuntime: true,
  sourcemap: false,
  mode: "production",
  directoryIndex: "index.html",
});
if (done.warnings.length) {
  console.error(done.warnings.join("\n"));
  process.exit(1);
}
console.log(JSON.stringify({ version, files: done.count, bytes: done.size }));
