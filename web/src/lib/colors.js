// Run colours: the same run gets the same colour on every reload and every
// machine, because the colour is a function of the run id alone.

// FNV-1a (32 bits) over the id's UTF-16 code units, then a final mix
// (murmur3's fmix32) so ids that differ in one trailing character (UUIDv7s
// created in one millisecond) land far apart on the wheel.
function hash32(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * runColor is the CSS colour of a run's lines, legend dot and table swatch.
 * The hue comes from a hash of the id; saturation and lightness depend on
 * the theme (darker on a light background, lighter on a dark one) and on
 * the hue (yellows and greens are drawn darker, since they look brighter),
 * so every colour keeps its contrast with the background.
 *
 * @param {string} runId
 * @param {boolean} [dark=false] colours for the dark theme
 * @returns {string} `hsl(H, S%, L%)`
 */
export function runColor(runId, dark = false) {
  const h = hash32(String(runId));
  const hue = h % 360;
  // A second, independent slice of the hash varies lightness a little, so
  // two runs with close hues still differ.
  const jitter = ((h >>> 9) % 3) * 4 - 4; // -4, 0 or +4
  const bright = hue >= 40 && hue <= 200; // yellow, green, cyan
  const sat = dark ? 70 : 65;
  const light = (dark ? (bright ? 58 : 66) : (bright ? 34 : 46)) + jitter;
  return `hsl(${hue}, ${sat}%, ${light}%)`;
}
