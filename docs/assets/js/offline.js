// Reading offline, on request: the footer's "Make the course available offline" registers the build's
// Workbox service worker (sitebuild/service_worker.mjs), which saves every file of this build in one
// cache named after it. A later build installs beside it and replaces it whole when no tab of the old
// one is open, so a page never mixes two builds. With `extra: offline: false` in mkdocs.yml the control
// is absent and an earlier registration is removed.

const PREFIX = "llm-course-offline-"; // the build's cache id; Workbox names the cache PREFIX<version>-precache-v2-<scope>
let manifest = null; // offline.json: { version, files, bytes }, and its size in MB (`size`)

document$.subscribe(() => {
  if (!("serviceWorker" in navigator)) return;
  if (document.querySelector("[data-course-offline-off]")) return forget();
  const box = document.querySelector("[data-course-offline]");
  if (box) control(box).catch((error) => say(box, "error", `Offline reading is not available: ${error.message}`));
});

async function control(box) {
  box.hidden = false;
  const button = box.querySelector("[data-offline-button]");
  manifest ??= await fetch(box.dataset.offlineManifest, { cache: "no-cache" }).then((r) => {
    if (!r.ok) throw new Error(`${box.dataset.offlineManifest}: HTTP ${r.status}`);
    return r.json().then((m) => ({ ...m, size: `${(m.bytes / 1e6).toFixed(0)} MB` }));
  });
  const registration = await navigator.serviceWorker.getRegistration(new URL(".", new URL(box.dataset.offlineWorker, location.href)).href);
  if (registration?.active && (await saved(manifest.version)) >= manifest.files) return showSaved(box, registration);
  if (registration?.installing) return track(box, registration);
  button.textContent = `Make the course available offline (${manifest.size})`;
  button.hidden = false;
  say(box, "idle", `Saves all ${manifest.files} files of the course (${manifest.size}) in this browser, so every lesson and simulator works without a network.`);
  button.onclick = async () => {
    button.disabled = true;
    try {
      track(box, await navigator.serviceWorker.register(box.dataset.offlineWorker));
    } catch (error) {
      button.disabled = false;
      say(box, "error", `The course could not be saved for offline reading: ${error.message}`);
    }
  };
}

function track(box, registration) {
  const button = box.querySelector("[data-offline-button]");
  const bar = box.querySelector("[data-offline-progress]");
  button.hidden = true;
  bar.hidden = false;
  bar.max = manifest.files;
  const tick = async () => {
    const count = await saved(manifest.version);
    bar.value = count;
    say(box, "saving", `Saving the course for offline reading: ${count} of ${manifest.files} files (${manifest.size})…`);
    const done = registration.active && !registration.installing && count >= manifest.files;
    const worker = registration.installing ?? registration.waiting ?? registration.active;
    if (!done && worker?.state !== "redundant") return setTimeout(tick, 250);
    bar.hidden = true;
    if (done) return showSaved(box, registration);
    button.hidden = false;
    button.disabled = false;
    say(box, "error", "Saving the course failed (the network dropped or the browser is out of space). Try again.");
  };
  tick();
}

function showSaved(box, registration) {
  const button = box.querySelector("[data-offline-button]");
  say(box, "saved", `The course is available offline in this browser (${manifest.size}, build ${manifest.version}).`);
  button.hidden = false;
  button.disabled = false;
  button.textContent = "Remove the offline copy";
  button.onclick = async () => {
    await registration.unregister();
    await forget();
    await control(box);
    say(box, "idle", "The offline copy was removed.");
  };
}

// Files of this build already in its cache (0 when none).
async function saved(version) {
  const name = (await caches.keys()).find((key) => key.startsWith(`${PREFIX}${version}-precache-`));
  return name ? (await (await caches.open(name)).keys()).length : 0;
}

async function forget() {
  for (const registration of await navigator.serviceWorker.getRegistrations()) {
    if (registration.active?.scriptURL.endsWith("/sw.js")) await registration.unregister();
  }
  for (const key of await caches.keys()) if (key.startsWith(PREFIX)) await caches.delete(key);
}

function say(box, state, text) {
  box.querySelector("[data-offline-status]").textContent = text;
  box.dataset.state = state;
}
