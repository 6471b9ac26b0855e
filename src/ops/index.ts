// Operating Herald: metrics, health, the status page and the doctor's checks. The one door into src/ops/.

export { allocatorOf, findJemalloc } from './allocator.ts';
export {
  createObservation,
  type Observation,
  type Operations,
  type OperationsParts,
  startOperations,
} from './create.ts';
export { DEFAULT_DATABASE_TIMEOUT_MS, DeadlineError, within } from './deadline.ts';
export {
  blocksSpeaking,
  type DoctorCheck,
  type DoctorContext,
  formatDoctorReport,
  runDoctor,
} from './doctor.ts';
export { doctorLogin } from './doctor-discord.ts';
export { type ProcessPlan, processesCheck } from './doctor-processes.ts';
export {
  type BudgetStopReason,
  type InteractionAnswer,
  noOpsEvents,
  type OpsEvents,
  type ProcessErrorKind,
  type UtteranceOutcome,
  type UtteranceSource,
} from './events.ts';
export {
  type CheckResult,
  checkReadiness,
  DEFAULT_TTS_READY_TIMEOUT_MS,
  databaseProbe,
  describeDatabaseFailure,
  RESUME_HINT,
  type Readiness,
  type ReadinessOptions,
  type ReadinessProbes,
} from './health.ts';
export { LATE_AUDIO_WARN_EVERY_MS, type LateAudioOptions, warnOfLateAudio } from './late-audio.ts';
export { createOpsMetrics, type OpsMetrics, type OpsMetricsOptions, TTS_ERROR_CODES } from './metrics.ts';
export {
  createVoiceWatch,
  logUtterances,
  observeAudioCache,
  observeBudgetStore,
  observeCacheStore,
  observeGateway,
  observeGenerate,
  observeInteractionAnswers,
  type VoiceWatch,
} from './observe.ts';
export { keepRecentProblems } from './recent-problems.ts';
export {
  type MetricsSource,
  type OpsServer,
  type OpsServerOptions,
  type ReadinessSource,
  sameSecret,
  startOpsServer,
} from './server.ts';
export { type StandbyOpsOptions, standingBySentence, startStandbyOpsServer } from './standby.ts';
export {
  type LiveView,
  liveOf,
  type OpsState,
  type RecentProblem,
  type SessionView,
  type ShardView,
  type StatusSource,
  statusOf,
} from './state.ts';
export {
  renderStatusPage,
  type SpendBucket,
  type StatusPageData,
  type StoredView,
  spendBuckets,
} from './status-page.ts';
