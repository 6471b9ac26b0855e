/** An error whose message is already a sentence for the member (a refusal, not a fault). */
export class UserFacingError extends Error {
  override readonly name: string = 'UserFacingError';
}
