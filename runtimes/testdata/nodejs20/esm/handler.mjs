// An ES module function: loaded with import() rather than require().
export async function handle (event) {
  return { module: 'esm', n: event.n }
}
