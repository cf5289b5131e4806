// A strict PNG reader for the screenshot tests: it checks the signature and
// every chunk's CRC, inflates the image data, undoes the row filters and
// lets a test read pixels. A screenshot cut short or altered anywhere on its
// way through the CDP proxy fails one of these checks.

import zlib from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const CHANNELS = { 0: 1, 2: 3, 4: 2, 6: 4 }; // grey, RGB, grey+alpha, RGBA

export function decodePng(buf) {
  if (!Buffer.isBuffer(buf)) buf = Buffer.from(buf);
  if (!buf.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG: bad signature');
  let off = 8;
  let ihdr;
  const idat = [];
  let sawEnd = false;
  while (off < buf.length) {
    if (off + 12 > buf.length) throw new Error(`PNG truncated in a chunk header at byte ${off}`);
    const len = buf.readUInt32BE(off);
    const type = buf.toString('latin1', off + 4, off + 8);
    if (off + 12 + len > buf.length) throw new Error(`PNG truncated in chunk ${type} at byte ${off}`);
    const data = buf.subarray(off + 8, off + 8 + len);
    const crc = buf.readUInt32BE(off + 8 + len);
    if (zlib.crc32(buf.subarray(off + 4, off + 8 + len)) !== crc) throw new Error(`PNG chunk ${type} at byte ${off} has a bad CRC`);
    off += 12 + len;
    if (type === 'IHDR') {
      ihdr = {
        width: data.readUInt32BE(0), height: data.readUInt32BE(4), bitDepth: data[8], colorType: data[9], interlace: data[12],
      };
    } else if (type === 'IDAT') {
      idat.push(data);
    } else if (type === 'IEND') {
      sawEnd = true;
      break;
    }
  }
  if (!ihdr) throw new Error('PNG has no IHDR');
  if (!sawEnd) throw new Error('PNG has no IEND: truncated');
  if (off !== buf.length) throw new Error(`PNG has ${buf.length - off} bytes after IEND`);
  const { width, height, bitDepth, colorType, interlace } = ihdr;
  const channels = CHANNELS[colorType];
  if (bitDepth !== 8 || !channels || interlace !== 0) {
    throw new Error(`unsupported PNG: bit depth ${bitDepth}, colour type ${colorType}, interlace ${interlace}`);
  }
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  if (raw.length !== height * (stride + 1)) {
    throw new Error(`PNG image data inflates to ${raw.length} bytes, expected ${height * (stride + 1)}`);
  }
  // Undo the filters in place into pixels.
  const px = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const src = y * (stride + 1) + 1;
    const dst = y * stride;
    const up = dst - stride;
    for (let i = 0; i < stride; i++) {
      const x = raw[src + i];
      const a = i >= channels ? px[dst + i - channels] : 0;
      const b = y > 0 ? px[up + i] : 0;
      const c = y > 0 && i >= channels ? px[up + i - channels] : 0;
      let v;
      switch (filter) {
        case 0: v = x; break;
        case 1: v = x + a; break;
        case 2: v = x + b; break;
        case 3: v = x + ((a + b) >> 1); break;
        case 4: {
          const p = a + b - c;
          const pa = Math.abs(p - a); const pb = Math.abs(p - b); const pc = Math.abs(p - c);
          v = x + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
          break;
        }
        default: throw new Error(`PNG row ${y} has unknown filter ${filter}`);
      }
      px[dst + i] = v & 0xff;
    }
  }
  return {
    width,
    height,
    /** [r, g, b] of the pixel at x, y. */
    rgb(x, y) {
      const i = (y * width + x) * channels;
      return channels >= 3 ? [px[i], px[i + 1], px[i + 2]] : [px[i], px[i], px[i]];
    },
  };
}
