// Loaded early (an async module in <head>) on pages with simulators: the Python worker starts
// while the page is still parsing. The pre-computed charts are static SVG in the page, so nothing
// the reader sees waits for this. client.js is one module per tab: later calls reuse this start.
import { start } from "./client.js";

start().catch(() => {}); // a failure is shown on every widget through client.js's status
