// A fake anywidget model for the browser tests (pagekit.FAKE_MODEL_JS puts this text at the top of a page's
// script): the interface the widget bundle uses (get, set, on, off, save_changes, send), no Jupyter.
// `recorded`: the traits each save_changes() snapshots into `saved`, so a test can check what would reach Python.
class FakeModel {
  constructor(state, recorded = []) {
    this.state = state;
    this.recorded = recorded;
    this.handlers = {};
    this.saved = [];
    this.sent = [];
  }
  get(k) { return this.state[k]; }
  set(k, v) {
    const old = this.state[k];
    this.state[k] = v;
    if (old !== v) { this.emit("change:" + k); this.emit("change"); }
  }
  on(e, cb) { (this.handlers[e] ??= []).push(cb); }
  off(e, cb) { this.handlers[e] = (this.handlers[e] || []).filter((f) => f !== cb); }
  emit(e) { for (const f of this.handlers[e] || []) f(); }
  save_changes() { this.saved.push(Object.fromEntries(this.recorded.map((k) => [k, this.state[k]]))); }
  send(m) { this.sent.push(m); }
}

// Base64 (how the tests carry the gzip bytes) to the DataView Jupyter hands a Bytes trait over as.
function toView(b64) {
  const s = atob(b64);
  const u = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) u[i] = s.charCodeAt(i);
  return new DataView(u.buffer);
}
