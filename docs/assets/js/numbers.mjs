// How the widgets print a metric: the same rules as sitebuild/numbers.py (the build's key figures),
// checked against it by tests/site/test_numbers.py.

// The key-figures table shows the first KEY_FIGURES metrics of the schema; the rest are under "Data table".
export const KEY_FIGURES = 8;

const BYTES = [[1e9, "GB"], [1e6, "MB"], [1e3, "KB"]];
// The unit a person would say: the largest in which the figure is at least 1 (3 significant digits).
const SCALES = {
  s: [[1, "s"], [1e-3, "ms"], [1e-6, "µs"]],
  B: [...BYTES, [1, "B"]],
  bytes: [...BYTES, [1, "bytes"]],
  GB: [[1, "GB"], [1e-3, "MB"]],
  GiB: [[1, "GiB"], [2 ** -10, "MiB"]],
  FLOP: [[1e15, "PFLOP"], [1e12, "TFLOP"], [1e9, "GFLOP"], [1, "FLOP"]],
};

// Whole numbers from 1,000 up with separators; smaller ones with 4 significant digits.
export function formatNumber(v) {
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v !== "number") return String(v ?? "");
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString("en-US");
  return String(Number(v.toPrecision(4)));
}

// [text, unit] of a key figure: 0.04782 s -> ["47.8", "ms"], 58.17e9 B -> ["58.2", "GB"].
export function formatMetric(v, unit = "") {
  const scales = Object.hasOwn(SCALES, unit) && SCALES[unit];
  // A ratio to 2 decimals, as vLLM logs 200.99x (halves away from zero, as the build's ROUND_HALF_UP).
  if (unit === "x" && typeof v === "number" && v && !Number.isInteger(v)) return [v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }), unit];
  if (!scales || typeof v !== "number" || v === 0) return [formatNumber(v), unit];
  const rounded = Math.abs(Number(v.toPrecision(3))); // 0.9996 s is "1 s", not "1,000 ms"
  const [factor, shown] = scales.find(([f]) => rounded >= f) ?? scales.at(-1);
  const x = v / factor;
  // Eighths under 10 are written out: 1.125 B per weight (a bitmask's 1/8 B on 1 B), not 1.13.
  const digits = Math.abs(x) < 10 && Number.isInteger(x * 8) ? 4 : 3;
  return [Math.abs(x) >= 999.5 ? Math.round(x).toLocaleString("en-US") : String(Number(x.toPrecision(digits))), shown];
}
