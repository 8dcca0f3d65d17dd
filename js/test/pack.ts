/**
 * Test-side writer of the binary payload (the layout of graphwidget/views/packed.py), for unit tests of the reader
 * that need payloads Python would never write (hostile or damaged ones) or column forms side by side. The real
 * Python writer against the real reader is tested in Chromium (tests/browser/test_big_graphs.py).
 */
export class PayloadBuilder {
  sections: Uint8Array[] = [];

  add(bytes: Uint8Array): number {
    this.sections.push(bytes);
    return this.sections.length - 1;
  }

  ints(values: number[], delta = false): Record<string, unknown> {
    const v = delta ? values.map((x, i) => (i ? x - values[i - 1] : x)) : values;
    return { ints: this.add(new Uint8Array(Int32Array.from(v).buffer)), nulls: null, delta };
  }

  intsWithNulls(values: (number | null)[]): Record<string, unknown> {
    const nulls = this.add(Uint8Array.from(values.map((x) => (x === null ? 1 : 0))));
    return { ints: this.add(new Uint8Array(Int32Array.from(values.map((x) => x ?? 0)).buffer)), nulls, delta: false };
  }

  nums(values: (number | null)[]): Record<string, unknown> {
    return { nums: this.add(new Uint8Array(Float64Array.from(values.map((x) => x ?? NaN)).buffer)) };
  }

  /** One JSON text per value (or the given texts, verbatim). */
  rows(values: unknown[], texts?: string[]): Record<string, unknown> {
    const t = texts ?? values.map((x) => JSON.stringify(x));
    const enc = new TextEncoder();
    const parts = t.map((s) => enc.encode(s));
    const offsets = new Uint32Array(parts.length + 1);
    parts.forEach((p, i) => { offsets[i + 1] = offsets[i] + p.length; });
    const text = new Uint8Array(offsets[parts.length]);
    parts.forEach((p, i) => text.set(p, offsets[i]));
    return { rows: this.add(text), offsets: this.add(new Uint8Array(offsets.buffer)) };
  }

  table(table: unknown[], index: number[]): Record<string, unknown> {
    const wide = table.length > 256;
    const ix = wide ? new Uint8Array(Uint16Array.from(index).buffer) : Uint8Array.from(index);
    return { table: this.rows(table), index: { type: wide ? "u16" : "u8", section: this.add(ix) } };
  }

  /** The payload bytes (not compressed); `total` overrides the length written in the fixed header. */
  finish(doc: unknown, opts: { version?: number; total?: number; spans?: unknown } = {}): Uint8Array {
    let header = new Uint8Array(0);
    let spans: number[][] = [];
    let pos = 0;
    for (let pass = 0; pass < 4; pass++) {
      spans = [];
      pos = align(20 + header.length);
      for (const s of this.sections) { spans.push([pos, s.length]); pos = align(pos + s.length); }
      const next = new TextEncoder().encode(JSON.stringify({ sections: opts.spans ?? spans, doc }));
      const stable = next.length === header.length; // the spans above were laid out for this header's length
      header = next;
      if (stable) break;
    }
    const total = Math.max(pos, 20 + header.length);
    const out = new Uint8Array(total);
    out.set([0x47, 0x57, 0x50, 0x4b]);
    const dv = new DataView(out.buffer);
    dv.setUint32(4, opts.version ?? 1, true);
    dv.setUint32(8, header.length, true);
    dv.setFloat64(12, opts.total ?? total, true);
    out.set(header, 20);
    spans.forEach(([at], k) => out.set(this.sections[k], at));
    return out;
  }
}

function align(n: number): number {
  return (n + 7) & ~7;
}

/** gzip with the platform's CompressionStream. */
export async function gzipBytes(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as BlobPart]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
