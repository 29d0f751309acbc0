// Loaded early (an async module in <head>) on pages with simulators: the Python worker starts while the
// page is parsing; nothing the reader sees waits for it. Later calls reuse this start (client.js).
import { start } from "./client.js";

start().catch(() => {}); // a failure is shown on every widget through client.js's status
