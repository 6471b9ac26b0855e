/** A streaming sample-rate converter for one channel of 16-bit audio. */
export interface Resampler {
  /** Converts the next input samples; returns the output samples they make available. */
  push(input: Int16Array): Int16Array;
  /** Ends the input and returns the remaining output, so the total is ⌈inputs × outRate / inRate⌉. */
  flush(): Int16Array;
}

// Kernel half-width in output-rate terms: 16 zero crossings each side keeps images below about -70 dB.
const HALF_WIDTH = 16;
// Cutoff slightly under Nyquist leaves room for the transition band.
const CUTOFF = 0.95;
const MAX_PHASES = 4096;

/** True when {@link createResampler} supports converting `inRate` to `outRate`. */
export function canResample(inRate: number, outRate: number): boolean {
  return Number.isInteger(inRate) && inRate > 0 && outRate / gcd(inRate, outRate) <= MAX_PHASES;
}

/** Makes a windowed-sinc polyphase resampler (Blackman window) from `inRate` to `outRate`. @throws RangeError for rates whose ratio needs more than 4096 phases. */
export function createResampler(inRate: number, outRate: number): Resampler {
  if (!canResample(inRate, outRate)) throw new RangeError(`cannot resample ${inRate} Hz to ${outRate} Hz`);
  const divisor = gcd(inRate, outRate);
  const up = outRate / divisor;
  const down = inRate / divisor;
  // Downsampling must cut off at the output's Nyquist, which widens the kernel in input samples.
  const cutoff = CUTOFF * Math.min(1, up / down);
  const half = Math.ceil(HALF_WIDTH / Math.min(1, up / down));
  const taps = 2 * half;
  const table = buildTable(up, half, cutoff);

  // Input samples from absolute index `start`; `half` zeros stand before the first real sample.
  let buffer = new Float32Array(half + 1024);
  let start = -half;
  let length = half;
  let produced = 0;
  let consumed = 0;

  const append = (input: ArrayLike<number>): void => {
    if (length + input.length > buffer.length) {
      const grown = new Float32Array(Math.max(buffer.length * 2, length + input.length));
      grown.set(buffer.subarray(0, length));
      buffer = grown;
    }
    for (let i = 0; i < input.length; i++) buffer[length + i] = input[i] ?? 0;
    length += input.length;
  };

  const run = (limit: number): Int16Array => {
    const out: number[] = [];
    for (;;) {
      if (produced >= limit) break;
      const position = produced * down;
      const base = Math.floor(position / up);
      const phase = position - base * up;
      // Output n needs input samples base-half+1 … base+half.
      const first = base - half + 1 - start;
      if (base + half >= start + length) break;
      let sum = 0;
      const row = phase * taps;
      for (let k = 0; k < taps; k++) sum += (buffer[first + k] ?? 0) * (table[row + k] ?? 0);
      out.push(sum < -32768 ? -32768 : sum > 32767 ? 32767 : Math.round(sum));
      produced++;
    }
    // Keep only what the next output still needs.
    const keepFrom = Math.floor((produced * down) / up) - half + 1 - start;
    if (keepFrom > 0) {
      buffer.copyWithin(0, keepFrom, length);
      length -= keepFrom;
      start += keepFrom;
    }
    return Int16Array.from(out);
  };

  return {
    push(input) {
      consumed += input.length;
      append(input);
      return run(Number.POSITIVE_INFINITY);
    },
    flush() {
      append(new Float32Array(half + 1));
      return run(Math.ceil((consumed * up) / down));
    },
  };
}

// Row p holds the taps for an output that falls p/up of the way between two input samples.
function buildTable(up: number, half: number, cutoff: number): Float32Array {
  const taps = 2 * half;
  const table = new Float32Array(up * taps);
  for (let phase = 0; phase < up; phase++) {
    const fraction = phase / up;
    let total = 0;
    for (let k = 0; k < taps; k++) {
      const t = k - half + 1 - fraction;
      const value = cutoff * sinc(cutoff * t) * blackman(t / half);
      table[phase * taps + k] = value;
      total += value;
    }
    // Unity gain at DC in every phase, so a constant input stays constant.
    for (let k = 0; k < taps; k++) table[phase * taps + k] = (table[phase * taps + k] ?? 0) / total;
  }
  return table;
}

function sinc(x: number): number {
  return x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
}

function blackman(u: number): number {
  if (Math.abs(u) >= 1) return 0;
  return 0.42 + 0.5 * Math.cos(Math.PI * u) + 0.08 * Math.cos(2 * Math.PI * u);
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
