// The shapes of the statewatch daemon's request and answer bodies. Each is a component schema
// of the daemon's OpenAPI document (docs/openapi.json in the statewatch sources, generated
// from its route table), turned into TypeScript at build time by scripts/generate-types.mjs
// (src/generated/schemas.ts): this file only gives them the client's names, so they cannot
// drift from the daemon. Answers may carry fields added later.
import type * as S from "./generated/schemas.js";

/** Every component schema of the daemon's OpenAPI document, by its name there. */
export type * as Schemas from "./generated/schemas.js";

export type ActorType = S.ActorType;
/** An event to record (POST /v1/events). */
export type EventInput = S.EventInput;
/** A journal event as stored: what POST /v1/events answers and GET /v1/export lists. */
export type StoredEvent = S.Event;
export type ChangeEvent = S.ChangeEvent;
export type StateChanges = S.StateChanges;
export type SessionState = S.SessionState;

export type SessionKind = Exclude<S.SessionUpsert["kind"], null | undefined>;
export type ThinkingLevel = Exclude<S.SessionUpsert["thinking"], null | undefined>;
export type SpawnRuntime = Exclude<S.SessionUpsert["runtime"], null | undefined>;

/** A registry upsert: a missing field keeps its stored value, null clears it (createdAt and
 * updatedAt: null keeps them); an empty string is refused. */
export type SessionFields = S.SessionUpsert;
export type SessionRecord = S.SessionRecord;
export type TranscriptMessage = S.TranscriptMessage;
export type Notice = S.Notice;
export type Cursor = S.Cursor;
export type Wake = S.Wake;
/** Where a gateway posts: the non-empty fields of a session's delivery route. */
export type Route = S.Route;
/** How to start a spawned run (a task delivery's options). */
export type SpawnOptions = S.SpawnOptions;
export type Provenance = S.Provenance;
export type Delivery = S.Delivery;
export type RunUpdate = S.RunUpdate;
export type UpstreamLinkInput = S.UpstreamLinkInput;
export type UpstreamLink = S.UpstreamLink;
export type PruneStats = S.PruneStats;
export type VerifyReport = S.VerifyReport;
export type Stats = S.Stats;
export type Health = S.Health;
export type Readiness = S.Readiness;

// ---- session tools -------------------------------------------------------------------------

export type SessionStatusParams = S.SessionStatusParams;
export type SessionUsage = S.SessionStatusAnswer["usage"];
export type SessionStatusAnswer = S.SessionStatusAnswer;
export type SessionsListParams = S.SessionsListParams;
export type SessionRow = S.SessionRow;
export type SessionsListAnswer = S.SessionsListAnswer;
export type SessionsHistoryParams = S.SessionsHistoryParams;
export type HistoryMessage = S.HistoryMessage;
export type SessionsHistoryAnswer = S.SessionsHistoryAnswer;
export type SessionsSendParams = S.SessionsSendParams;
export type SessionsSendAnswer = S.SessionsSendAnswer;
export type SessionsSpawnParams = S.SessionsSpawnParams;
export type SessionsSpawnAnswer = S.SessionsSpawnAnswer;
export type SessionsYieldParams = S.SessionsYieldParams;
export type SessionsYieldAnswer = S.SessionsYieldAnswer;
export type SubagentsParams = S.SubagentsParams;
export type SubagentRow = S.SubagentRow;
export type SubagentsAnswer = S.SubagentsAnswer;
