// The scripted Responses API model lives in the test kit (the benchmarks drive Codex with it
// too); the end-to-end tests import it from here as before.
export type {
  ResponsesInputItem,
  ResponsesRequest,
  ResponsesTool,
  ScriptedResponsesModel,
  ScriptedResponsesReply,
} from '@ctxbus/test-kit/scripted-responses-model';
export {
  contentText,
  functionOutputs,
  requestText,
  roleText,
  startScriptedResponsesModel,
  toolNames,
} from '@ctxbus/test-kit/scripted-responses-model';
