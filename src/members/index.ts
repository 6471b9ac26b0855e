// What members and admins set for how Herald speaks in a server: dictionary, block list, spoken names,
// temperatures, and the voice preview. Import from here.
export {
  type AddWordOutcome,
  createMemberStore,
  MEMBER_LIMITS,
  MEMBER_MIGRATIONS,
  type MemberStore,
} from './store.ts';
export { resolveTemperature, tunedSynthesize } from './tuning.ts';
