/** Holds the thread for `ms`: a slow player, a transaction with more in it, a turn of the event loop busy with I/O. */
export function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}
