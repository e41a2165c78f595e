export * from "../../src/index.js";
export { create } from "@bufbuild/protobuf";
