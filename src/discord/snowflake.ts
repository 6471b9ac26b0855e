/** True for a Discord id (a snowflake: 17 to 20 decimal digits). */
export function isSnowflake(text: string): boolean {
  return /^\d{17,20}$/.test(text);
}
