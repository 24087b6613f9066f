/** The rejection of `p`, failing the test if `p` resolves. */
export async function rejectionOf(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection, but it resolved');
}
