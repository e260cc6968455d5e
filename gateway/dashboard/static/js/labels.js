// Labels that never overlap (pure): text is cut to the room it has, and a label that would
// cover another (or a box) is moved a line up or down, else left out (its title keeps it).
export const CHAR_PX = 6.5;  // a generous width per character of the 12 px label font
export const LINE_PX = 14;

export function ellipsize(text, px, charPx = CHAR_PX) {
  const room = Math.floor(px / charPx);
  const s = String(text);
  if (s.length <= room) return s;
  return room < 2 ? '' : s.slice(0, room - 1) + '…';
}

function overlaps(a, b) {
  return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

// labels: [{x, y, text}] centred on x with their baseline at y; boxes: [{x0, y0, x1, y1}]
// already taken. Returns, in order, each label's y where it fits, or null (not drawn).
export function placeLabels(labels, boxes = [], charPx = CHAR_PX, linePx = LINE_PX) {
  const taken = [...boxes];
  return labels.map((l) => {
    const w = String(l.text).length * charPx;
    for (const k of [0, -1, 1, -2, 2]) {
      const y = l.y + k * linePx;
      const box = {x0: l.x - w / 2, x1: l.x + w / 2, y0: y - linePx + 2, y1: y + 2};
      if (!taken.some((b) => overlaps(b, box))) { taken.push(box); return y; }
    }
    return null;
  });
}
