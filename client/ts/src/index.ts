/** The runjournal TypeScript client. See README.md. */
export * from "./builders.js";
export * from "./client.js";
export * from "./errors.js";
export * from "./fingerprint.js";
export * from "./retry.js";
export * from "./run.js";
export * from "./watch.js";
export * from "./gen/runjournal/v1/records_pb.js";
export * from "./gen/runjournal/v1/state_pb.js";
export * from "./gen/runjournal/v1/journal_service_pb.js";
export * from "./gen/runjournal/v1/task_service_pb.js";
export { ErrorInfoSchema, type ErrorInfo } from "./gen/google/rpc/error_details_pb.js";
