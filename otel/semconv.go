package otel

// The attribute names inspect writes and reads first: the OTel GenAI
// semantic conventions (current names; importers/otlp also reads the older
// ones and OpenInference's and the AI SDK's), and inspect's own inspect.*
// attributes, which carry what GenAI has no name for (forks, joins,
// hand-offs, statuses other than error) so an exported run imports back
// as the same graph.
const (
	AttrOperationName      = "gen_ai.operation.name" // chat, execute_tool, invoke_agent
	AttrProviderName       = "gen_ai.provider.name"
	AttrAgentName          = "gen_ai.agent.name"
	AttrConversationID     = "gen_ai.conversation.id"
	AttrRequestModel       = "gen_ai.request.model"
	AttrResponseModel      = "gen_ai.response.model"
	AttrFinishReasons      = "gen_ai.response.finish_reasons"
	AttrUsageInput         = "gen_ai.usage.input_tokens" // every input token, cache reads and writes included
	AttrUsageOutput        = "gen_ai.usage.output_tokens"
	AttrUsageCacheRead     = "gen_ai.usage.cache_read.input_tokens"
	AttrUsageCacheCreation = "gen_ai.usage.cache_creation.input_tokens"
	AttrUsageReasoning     = "gen_ai.usage.reasoning.output_tokens"
	AttrInputMessages      = "gen_ai.input.messages"
	AttrOutputMessages     = "gen_ai.output.messages"
	AttrSystemInstructions = "gen_ai.system_instructions"
	AttrToolDefinitions    = "gen_ai.tool.definitions"
	AttrToolName           = "gen_ai.tool.name"
	AttrToolCallID         = "gen_ai.tool.call.id"
	AttrToolCallArguments  = "gen_ai.tool.call.arguments"
	AttrToolCallResult     = "gen_ai.tool.call.result"
	AttrToolType           = "gen_ai.tool.type"

	// AttrInspectKind marks a span of inspect's export that is not a
	// GenAI operation of its own: user, final, handoff, fork, join.
	AttrInspectKind     = "inspect.kind"
	AttrInspectSeq      = "inspect.seq"    // the node's n<seq>
	AttrInspectBranch   = "inspect.branch" // the conversation's branch path
	AttrInspectStatus   = "inspect.status" // ok, error, exhausted, cancelled, interrupted
	AttrInspectText     = "inspect.text"   // a user turn or a final answer
	AttrInspectResearch = "inspect.tool.research"
	AttrInspectRunID    = "inspect.run.id"
	AttrInspectTasks    = "inspect.run.tasks"
	AttrInspectProject  = "inspect.run.project"
	// AttrInspectSourceFormat and AttrInspectSourceVersion are, on the
	// root span of a run inspect imported from another tool, where the
	// run came from (claude-code 2.1.3): read back, the run is audited in
	// that stack's terms (stack.For), as it was before the trip.
	AttrInspectSourceFormat  = "inspect.run.source.format"
	AttrInspectSourceVersion = "inspect.run.source.version"
	AttrInspectHandoffFrom   = "inspect.handoff.from"
	AttrInspectHandoffTo     = "inspect.handoff.to"
	AttrInspectReason        = "inspect.handoff.reason"
	AttrInspectContext       = "inspect.fork.context"
	AttrInspectBranches      = "inspect.fork.branches" // JSON: [{name, agent, instructions}]
	AttrInspectJoin          = "inspect.join.branches" // JSON: [{name, agent, status, duration_ms, answer}]
	AttrInspectAnswer        = "inspect.branch.answer"
)
