// The file format of the build's Python start-up snapshot, shared by the build (sitebuild/snapshot.mjs
// packs it) and the worker (worker.js unpacks it). Plain JavaScript, no dependency.
//
// Pyodide's snapshot is its header followed by the WebAssembly memory (31 MB). Two things in that
// memory need not travel: pages of zeros (about half of it), and the bytes the memory still shares
// with pyodide.asm.wasm's data segments, the 3.2 MB of static data the runtime starts from, which
// the reader downloads anyway as the .wasm. `pack` turns those bytes to zero (gzip then takes them
// for almost nothing; 97 bytes that Python set to zero are listed, so `unpack` can tell them apart)
// and keeps only the pages holding a non-zero byte. `unpack` reverses both with the .wasm's bytes.
//
// Little-endian uint32s: MAGIC, the memory's length, where the WebAssembly memory starts in it (the
// length of Pyodide's header), the number of segments, the number of zeroed bytes; then (offset,
// length) per segment, then the offsets of the zeroed bytes, then the segments' bytes in order.
export const MAGIC = 0x3253594e; // "NYS2"
const PAGE = 4096;

// The active data segments of a WebAssembly module: [{ offset, bytes }] (offset in its memory).
export function dataSegments(wasm) {
  const w = wasm instanceof Uint8Array ? wasm : new Uint8Array(wasm);
  let at = 8; // after the magic number and the version
  const uleb = () => {
    let value = 0, shift = 0, byte;
    do { byte = w[at++]; value += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte & 0x80);
    return value;
  };
  const sleb32 = () => {
    let value = 0, shift = 0, byte;
    do { byte = w[at++]; value |= (byte & 0x7f) << shift; shift += 7; } while (byte & 0x80);
    return shift < 32 && byte & 0x40 ? value | (-1 << shift) : value;
  };
  while (at < w.length) {
    const id = w[at++];
    const size = uleb();
    const end = at + size;
    if (id === 11) {
      const segments = [];
      for (let i = uleb(); i > 0; i--) {
        const flags = uleb();
        if (flags === 1) { at += uleb(); continue; } // passive: not in the memory at start
        if (flags === 2) uleb(); // memory index
        if (w[at++] !== 0x41) throw new Error("a data segment's offset is not a constant");
        const offset = sleb32();
        if (w[at++] !== 0x0b) throw new Error("a data segment's offset is not a constant");
        const length = uleb();
        segments.push({ offset, bytes: w.subarray(at, at + length) });
        at += length;
      }
      return segments;
    }
    at = end;
  }
  return [];
}

// Pyodide's snapshot (its header, then the memory) -> this format, not yet compressed.
export function pack(snapshot, wasm) {
  const base = new Uint32Array(snapshot.buffer, snapshot.byteOffset, 2)[1]; // Pyodide's header length
  const memory = snapshot.slice();
  const zeroed = []; // bytes Python set to zero where the data segment holds another value
  for (const { offset, bytes } of dataSegments(wasm)) {
    const at = base + offset;
    for (let i = 0; i < bytes.length; i++) {
      if (memory[at + i] === bytes[i]) memory[at + i] = 0;
      else if (memory[at + i] === 0) zeroed.push(at + i);
    }
  }
  const segments = []; // [offset, length] of runs of pages holding a non-zero byte
  for (let page = 0; page < memory.length; page += PAGE) {
    if (!memory.subarray(page, page + PAGE).some((byte) => byte !== 0)) continue;
    const last = segments.at(-1);
    const length = Math.min(PAGE, memory.length - page);
    if (last && last[0] + last[1] === page) last[1] += length;
    else segments.push([page, length]);
  }
  const header = new Uint32Array([MAGIC, memory.length, base, segments.length, zeroed.length, ...segments.flat(), ...zeroed]);
  const parts = [new Uint8Array(header.buffer), ...segments.map(([at, n]) => memory.subarray(at, at + n))];
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) { out.set(part, at); at += part.length; }
  return out;
}

// Throws unless `bytes` starts as this format says and holds as many bytes as its table lists.
export function check(bytes) {
  if (bytes.length < 20) throw new Error("the snapshot file is not in the expected format");
  const [magic, , , count, zeroed] = new Uint32Array(bytes.slice(0, 20).buffer);
  if (magic !== MAGIC) throw new Error("the snapshot file is not in the expected format");
  const table = new Uint32Array(bytes.slice(20, 20 + 8 * count).buffer);
  let length = 20 + 8 * count + 4 * zeroed;
  for (let i = 0; i < count; i++) length += table[2 * i + 1];
  if (length !== bytes.length) throw new Error(`the snapshot file holds ${bytes.length} bytes, not ${length}`);
}

// This format -> Pyodide's snapshot, with the data segments of the same pyodide.asm.wasm.
export function unpack(bytes, wasm) {
  check(bytes);
  const [, size, base, count, zeroedCount] = new Uint32Array(bytes.slice(0, 20).buffer);
  const table = new Uint32Array(bytes.slice(20, 20 + 8 * count).buffer);
  let at = 20 + 8 * count;
  const zeroed = new Uint32Array(bytes.slice(at, at + 4 * zeroedCount).buffer);
  at += 4 * zeroedCount;
  const memory = new Uint8Array(size);
  for (let i = 0; i < count; i++) {
    const [offset, length] = [table[2 * i], table[2 * i + 1]];
    memory.set(bytes.subarray(at, at + length), offset);
    at += length;
  }
  for (const { offset, bytes: data } of dataSegments(wasm)) {
    const start = base + offset;
    for (let i = 0; i < data.length; i++) if (memory[start + i] === 0) memory[start + i] = data[i];
  }
  for (const offset of zeroed) memory[offset] = 0;
  return memory;
}
