// Generated from docs/openapi.json by `npm run openapi` (openapi-typescript). Do not edit.
export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Health (no key needed)
         * @description 200 while the service can take tasks; 503 storage_full / storage_unavailable while its database cannot be written; 503 starting until it has taken up the tasks a previous process left unfinished.
         */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics (text format) */
        get: operations["getMetrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/agents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Subagent definitions with their resolved model, step limit and tools */
        get: operations["listAgents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/skills": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The skills of SKILLS_DIR (Agent Skills: a folder with its SKILL.md) and the definitions that preload them */
        get: operations["listSkills"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List tasks, newest first */
        get: operations["listTasks"];
        put?: never;
        /**
         * Run a subagent task
         * @description Answers 202 with the task id and its stream URL; with ?wait=true answers 200 with the TaskOutput once the task ends: the status line and headers (Location, X-Task-Id) go out at once and a space every few seconds keeps the connection alive (JSON allows leading whitespace), so any client can wait however long the task runs. A repeated Idempotency-Key with the same body answers 200 with the first task.
         */
        post: operations["createTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a task */
        get: operations["getTask"];
        put?: never;
        post?: never;
        /**
         * Purge a finished task's content (admin)
         * @description Removes its prompt, conversation, events, steering messages, summary and output; its usage (tokens, cost, record, billed calls, roll-ups) stays. The workspace files belong to the parent task and stay. Again: 200, nothing more to do. 409 task_not_finished while it runs (cancel it first).
         */
        delete: operations["purgeTask"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel a task (idempotent)
         * @description A queued or running task ends `aborted` with code `cancelled`; a finished one is returned as it is.
         */
        post: operations["cancelTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A task's conversation as the model saw it
         * @description User, assistant and tool messages (not the system prompt), as stored after each finished step; a follow-up starts with the conversation of the task it continues. Tool results longer than 16 KiB are stored cut.
         */
        get: operations["getTaskMessages"];
        put?: never;
        /**
         * Steer a queued or running task
         * @description The prompt goes to the model as a user message before its next step (event message.received). Messages wait in memory: one not yet delivered when the service stops is lost. A finished task answers 409 task_finished: continue it with a new task whose task_id is its id.
         */
        post: operations["steerTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resume a task paused at a budget
         * @description Optionally replaces the task's own budget (to raise it), then continues the task from its next step (task.resumed). 409 budget_exceeded while a budget is still reached (raise the standing budget first), 409 task_not_paused unless the task is paused.
         */
        post: operations["resumeTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/approvals/{requestId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Answer a tool call waiting for approval
         * @description allow runs the call (with `input` instead of its own when given, checked against the tool); deny gives the model a tool error with `message`. Once every call of the step is answered the task goes on (task.resumed). The same answer again is 200; a different one 409 approval_answered; an unknown request 404.
         */
        post: operations["answerApproval"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/tool-results/{requestId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Post the result of a caller-run tool's call
         * @description `{ output }` is what the model reads as the tool's result, `{ error }` a tool error it reads. Once every request of the step is answered the task goes on (task.resumed). The same result again is 200; a different one (or one after the timeout failed the call) 409 tool_result_submitted; an unknown request 404; a task that ended first 409 task_finished.
         */
        post: operations["submitToolResult"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/apply": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Write a worktree task's changes into the shared workspace
         * @description Every file the task added or modified in its copy replaces the shared one atomically, every file it deleted is removed; then the copy goes. 409 conflict (`error.details.paths`) when a changed file was changed in the shared workspace since the copy was taken: nothing is written then. 409 already_applied the second time, 409 task_not_finished while it runs, 409 not_a_worktree for a task of the shared workspace, 410 worktree_removed once its copy expired (WORKTREE_TTL_MS).
         */
        post: operations["applyTaskChanges"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/changes.diff": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A worktree task's changes as a unified diff
         * @description The shared workspace as it is now (`a/`) against the task's copy (`b/`), for the files it changed: what applying would do. A file over 1 MiB or with a NUL byte shows as binary; `git apply` and `patch -p1` take it.
         */
        get: operations["getTaskChangesDiff"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/files/{path}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download a file as a task sees it
         * @description A worktree task's files come from its copy while there is one (its artifacts' `url`s point here); any other task's, or one applied, from the shared workspace. Nothing outside is ever served.
         */
        get: operations["getTaskFile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/replay": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Run a finished model task again on another model or definition
         * @description A new task (TaskOutput `replayOf`, `replay`) runs the original prompt, with its context, fork messages and earlier conversation, on `model` or `subagent_type` (default: the original's), in a worktree copy of the workspace: nothing it runs touches the shared one (POST /tasks/{id}/apply writes its changes back). With `tools: "recorded"` (the default) a call whose name and input equal the original's call at the same position is answered from the original's transcript and not run (event `tool.replayed`); the first that differs emits `replay.diverged` and every call from then on runs. Once it ends, `replay.comparison` sets it against the original. 404 unknown task, 409 task_not_finished, 409 task_purged, 400 not_replayable (a shell or ACP task).
         */
        post: operations["replayTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/replays": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The tenant's batches of replays, newest first
         * @description Each batch with its variants and how many replays it holds; GET /replays/{id} answers its rows. Paged as GET /tasks is.
         */
        get: operations["listReplays"];
        put?: never;
        /**
         * Replay several finished tasks, each on every variant
         * @description One replay (as POST /tasks/{id}/replay) per task and variant: the tasks named in `taskIds`, or the tenant's finished model tasks that match `filter`, oldest first, as many as the batch holds (at most 100 replays in all). Every pair is checked before any starts (404, 409 and 400 as for one replay). Each replay is a task within the queue and the budgets: one the queue has no room for is a row with its refusal. GET /replays/{id} answers the rows.
         */
        post: operations["startReplays"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/replays/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A batch of replays: one row per task and variant, with each comparison */
        get: operations["getReplays"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/mcp": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** MCP: a session's server-to-client stream (SSE) */
        get: operations["mcpStream"];
        put?: never;
        /**
         * MCP (Streamable HTTP): the `task` tool
         * @description The service as an MCP server: `initialize` opens a session (`Mcp-Session-Id`), then `tools/list` shows one tool, `task`, whose input is the task tool's (`subagent_type` among GET /agents' types, `description`, `prompt`, `task_id`) plus `parentTaskId` and `userId` (or the X-Parent-Task-Id and X-User-Id headers). A call runs the subagent and answers its compact TaskOutput; progress notifications while it runs; `notifications/cancelled` cancels it.
         */
        post: operations["mcp"];
        /** MCP: end a session */
        delete: operations["mcpEndSession"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/usage": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Usage totals, optionally grouped
         * @description Sums the usage records (one per task that started) matching the filters; `from`/`to` apply to start time.
         */
        get: operations["getUsage"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/usage/records": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Raw usage records, newest first */
        get: operations["listUsageRecords"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/budgets/{scope}/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The standing budget of a parent task or a user, with what it has spent */
        get: operations["getBudget"];
        /**
         * Set the standing budget of a parent task or a user
         * @description Checked before every model call of every task of the scope; a task that reaches it pauses (task.paused) until POST /tasks/{id}/resume once the budget is raised. Replaces an earlier budget of the scope.
         */
        put: operations["putBudget"];
        post?: never;
        /** Remove the standing budget of a parent task or a user */
        delete: operations["deleteBudget"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tenant's webhook endpoints (without secrets) */
        get: operations["listWebhooks"];
        put?: never;
        /**
         * Register a webhook endpoint for task events
         * @description Deliveries are POSTed as Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature) with a WebhookPayload body, retried with exponential backoff for WEBHOOK_GIVE_UP_MS (3 days by default). A URL that resolves to a private, loopback or link-local address is refused unless WEBHOOK_ALLOW_PRIVATE=true. A tenant has at most MAX_WEBHOOKS_PER_TENANT endpoints (409 webhook_limit).
         */
        post: operations["createWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}/enable": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Turn a disabled endpoint back on
         * @description New events are queued for it again; deliveries that failed while it was disabled can be sent again with the retry route.
         */
        post: operations["enableWebhook"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Remove a webhook endpoint (its pending deliveries are dropped) */
        delete: operations["deleteWebhook"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/{id}/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** An endpoint's deliveries, newest first */
        get: operations["listWebhookDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/webhooks/deliveries/{deliveryId}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a delivery again now (a failed one becomes pending) */
        post: operations["retryWebhookDelivery"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/agent-card.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The A2A agent card
         * @description One skill per subagent type; the JSON-RPC endpoint for A2A v1.0 and v0.3. Public, like /healthz.
         */
        get: operations["getAgentCard"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/a2a": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A2A JSON-RPC endpoint
         * @description A2A v1.0 (send `A2A-Version: 1.0`; SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, and the TaskPushNotificationConfig methods) or v0.3 (no header; message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe, tasks/pushNotificationConfig/*). Streaming methods answer text/event-stream. Errors are JSON-RPC errors (HTTP 200).
         */
        post: operations["a2aJsonRpc"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workspaces/{parentTaskId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List a workspace
         * @description Every file, folder and link of the parent task's workspace, recursively, with paths relative to it, sorted. Links are listed as links and never followed; FIFOs, sockets and devices are left out. At most 10,000 entries (`truncated` says when there were more).
         */
        get: operations["listWorkspace"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/workspaces/{parentTaskId}/files/{path}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Download a workspace file
         * @description Serves a regular file of the parent task's workspace; nothing outside the workspace is ever served.
         */
        get: operations["getWorkspaceFile"];
        /**
         * Upload a workspace file
         * @description The raw request body (any content type) becomes the file at that path in the parent task's workspace; the workspace and missing folders are created, an existing file is replaced atomically (a reader sees the old file or the new one, never half). Over MAX_UPLOAD_BYTES (default 100 MiB): 413, and nothing is changed. A path through a link leading outside, or at a folder, is refused.
         */
        put: operations["putWorkspaceFile"];
        post?: never;
        /**
         * Delete a workspace file or folder
         * @description Removes a file, a link (never what it points to) or a folder with everything in it. A link on the way that leads outside the workspace is refused.
         */
        delete: operations["deleteWorkspaceFile"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/memory/{scope}/{key}/{type}/files/{path}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Read a memory folder's file, or list the folder (empty path)
         * @description The memory a definition with `memory: user | parent | definition` keeps for that user, parent task or itself (in the caller’s tenant). With an empty path: every file and folder of it, as JSON, and its size. Otherwise the file, served as workspace files are (a link, FIFO or folder is refused). 404 for a memory never written.
         */
        get: operations["getMemoryFile"];
        /**
         * Write a file of a memory folder
         * @description The raw body becomes the file (folders are made), replacing one there atomically: the tasks of that memory see the old file or the new one, never half. 413 when the folder would hold more than MEMORY_MAX_BYTES (or the body is over MAX_UPLOAD_BYTES); nothing is changed then.
         */
        put: operations["putMemoryFile"];
        post?: never;
        /** Delete a file or folder of a memory folder, or the whole memory (empty path) (admin) */
        delete: operations["deleteMemoryFile"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/users/{userId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Erase a user: purge every task of theirs and remove their memories, keep their usage under an opaque id (admin)
         * @description Every task of the user (in this tenant) is purged as DELETE /tasks/:id does, and their memory folders (definitions with `memory: user`) are removed; their usage records, roll-ups and standing budget stay, with userId replaced by `erased:<first 16 hex of sha256(userId)>`. 409 user_has_unfinished_tasks while one of their tasks runs, waits or is paused (cancel them first). Erasing again finds nothing: { tasks: 0, events: 0, memories: 0 }.
         */
        delete: operations["eraseUser"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/audit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Who changed what: budgets, webhooks, keys, approvals, deletions (admin)
         * @description Newest first. `key` is the caller key’s fingerprint (sha256:…), never the key. Kept past RETENTION_DAYS.
         */
        get: operations["listAudit"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/keys": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This tenant's keys made with POST /keys (admin), newest first; never the keys themselves */
        get: operations["listKeys"];
        put?: never;
        /**
         * Make an API key for this tenant (admin); it is shown once
         * @description Stored as its SHA-256 only. Works on every instance within seconds, beside the keys of API_KEYS; DELETE /keys/:id revokes it (within 5 s everywhere). 409 auth_disabled while API_KEYS is unset.
         */
        post: operations["createKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/keys/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /**
         * Revoke a key made with POST /keys (admin)
         * @description It stops working on every instance within 5 s. 404 for an unknown (or already revoked) key of this tenant.
         */
        delete: operations["revokeKey"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Progress events of one task (WebSocket)
         * @description Replays every stored event with seq > after, then live events; heartbeats while idle; closes with 1000 after task.finished.
         */
        get: operations["streamTask"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Progress events of every task of a parent task (WebSocket)
         * @description Events of every task of the parent, each with its own task's seq and with parentSeq, its place among the parent's events. With ?after=<parentSeq> it replays every stored event after that cursor (finished tasks included), so a reader that reconnects misses nothing; without it, the stored events of the parent's unfinished tasks. Then live events. Stays open until the client closes it.
         */
        get: operations["streamParent"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/tasks/{id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Progress events of one task (server-sent events)
         * @description The messages of `/tasks/{id}/stream` as `text/event-stream`: `id:` is the seq, `event:` the type, `data:` the StreamMessage JSON; heartbeats are comments (`: {"type":"heartbeat",...}`). Replays the stored events after `Last-Event-ID` (or `?after=`), then live ones, and ends after task.finished. A finished task with nothing after the cursor answers 204, which tells an EventSource to stop reconnecting. `?access_token=` may stand in for the Authorization header (EventSource cannot set it).
         */
        get: operations["taskEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Progress events of every task of a parent task (server-sent events)
         * @description The messages of `/stream` as `text/event-stream`, `id:` being each event's parentSeq, so an EventSource that reconnects with `Last-Event-ID` misses nothing. Without a cursor: the stored events of the parent's unfinished tasks, then live ones. Stays open until the client closes it.
         */
        get: operations["parentEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export interface webhooks {
    taskEvent: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * A task event, POSTed to each endpoint that asked for it
         * @description Standard Webhooks: verify webhook-signature (HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" with the endpoint secret) with any Standard Webhooks library; webhook-id is the same on every retry. Answer 2xx within WEBHOOK_TIMEOUT_MS; anything else is retried with backoff.
         */
        post: operations["taskEvent"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export interface components {
    schemas: {
        TaskContextInput: {
            parentTaskId: string;
            userId: string;
            toolCallId?: string;
            timezone?: string;
        };
        ModelMessageInput: {
            /** @enum {string} */
            role: "user" | "assistant" | "tool" | "system";
            content: string | unknown[];
        } & {
            [key: string]: unknown;
        };
        Error: {
            error: {
                code: string;
                message: string;
                details?: unknown;
            };
        };
        TaskContext: {
            parentTaskId: string;
            userId: string;
            toolCallId?: string;
            timezone?: string;
        };
        Task: {
            id: string;
            /** @enum {string} */
            status: "queued" | "running" | "paused" | "completed" | "aborted" | "error";
            subagent_type: string;
            description: string;
            model: string | null;
            context: components["schemas"]["TaskContext"];
            summary: string | null;
            artifacts: components["schemas"]["Artifact"][];
            skipped: components["schemas"]["SkippedPath"][];
            output: unknown;
            steps: number;
            stopReason: ("complete" | "text" | "max_steps") | null;
            usage: {
                inputTokens: number;
                outputTokens: number;
                totalTokens: number;
                cachedInputTokens: number;
                reasoningTokens: number;
                costMicroUsd: number | null;
                compactions: number;
            };
            pause: components["schemas"]["Pause"] | null;
            progress: components["schemas"]["Progress"] | null;
            sessionId: string;
            previousTaskId: string | null;
            depth: number;
            parentTask: string | null;
            background: boolean;
            changes: {
                added: string[];
                modified: string[];
                deleted: string[];
                patchUrl: string;
                appliedAt: string | null;
            } | null;
            outcome: {
                /** @enum {string} */
                status: "satisfied" | "failed" | "max_iterations_reached";
                iterations: number;
                criteria: {
                    name: string;
                    passed: boolean;
                    note: string;
                }[];
                feedback: string | null;
            } | null;
            candidates: {
                taskId: string;
                model: string | null;
                /** @enum {string} */
                status: "queued" | "running" | "paused" | "completed" | "aborted" | "error";
                outcome: {
                    /** @enum {string} */
                    status: "satisfied" | "failed" | "max_iterations_reached";
                    iterations: number;
                    criteria: {
                        name: string;
                        passed: boolean;
                        note: string;
                    }[];
                    feedback: string | null;
                } | null;
                costMicroUsd: number;
                selected: boolean;
            }[] | null;
            error: components["schemas"]["TaskError"] | null;
            replayOf: string | null;
            replay: {
                of: string;
                /** @enum {string} */
                tools: "recorded" | "live";
                divergedAtStep: number | null;
                comparison: {
                    steps: {
                        original: number;
                        replay: number;
                    };
                    inputTokens: {
                        original: number;
                        replay: number;
                    };
                    outputTokens: {
                        original: number;
                        replay: number;
                    };
                    costMicroUsd: {
                        original: number;
                        replay: number;
                    };
                    sameSummary: boolean;
                    artifacts: {
                        same: string[];
                        changed: string[];
                        missing: string[];
                    };
                } | null;
            } | null;
            purged: boolean;
            createdAt: string;
            startedAt: string | null;
            completedAt: string | null;
        };
        TaskAccepted: {
            id: string;
            /** @enum {string} */
            status: "queued" | "running" | "paused" | "completed" | "aborted" | "error";
            streamUrl: string;
        };
        TaskList: {
            tasks: components["schemas"]["Task"][];
            nextCursor: string | null;
        };
        TaskError: {
            code: string;
            message: string;
        };
        TaskMessages: {
            messages: components["schemas"]["ModelMessage"][];
        };
        ModelMessage: {
            /** @enum {string} */
            role: "user" | "assistant" | "tool" | "system";
            content: string | unknown[];
        } & {
            [key: string]: unknown;
        };
        Progress: {
            /** @enum {string} */
            phase: "queued" | "model" | "tool" | "paused";
            step: number;
            tool?: string;
            /** @enum {string} */
            reason?: "budget" | "approval" | "tool";
            pending?: {
                requestId: string;
                toolCallId: string;
                toolName: string;
                input: unknown;
                /** @enum {string} */
                kind: "approval" | "tool";
            }[];
            phaseSince: string;
            lastActivityAt: string;
            usage: components["schemas"]["Usage"];
        };
        Pause: {
            /** @constant */
            reason: "budget";
            /** @enum {string} */
            budget: "task" | "parent" | "user";
            /** @enum {string} */
            measure: "tokens" | "costMicroUsd" | "durationMs";
            limit: number;
            spent: number;
            since: string;
            task?: string;
            attempts?: string[];
        } | {
            requestId: string;
            toolCallId: string;
            toolName: string;
            input: unknown;
            /** @constant */
            reason: "approval";
            since: string;
            expiresAt: string;
            pending: {
                requestId: string;
                toolCallId: string;
                toolName: string;
                input: unknown;
                /** @enum {string} */
                kind: "approval" | "tool";
                answer: ({
                    /** @enum {string} */
                    decision: "allow" | "deny";
                    message?: string;
                    input?: {
                        [key: string]: unknown;
                    };
                    /** @enum {string} */
                    by: "caller" | "timeout";
                } | {
                    /** @enum {string} */
                    by: "caller" | "timeout";
                    isError: boolean;
                }) | null;
            }[];
        } | {
            requestId: string;
            toolCallId: string;
            toolName: string;
            input: unknown;
            /** @constant */
            reason: "tool";
            since: string;
            expiresAt: string;
            pending: {
                requestId: string;
                toolCallId: string;
                toolName: string;
                input: unknown;
                /** @enum {string} */
                kind: "approval" | "tool";
                answer: ({
                    /** @enum {string} */
                    decision: "allow" | "deny";
                    message?: string;
                    input?: {
                        [key: string]: unknown;
                    };
                    /** @enum {string} */
                    by: "caller" | "timeout";
                } | {
                    /** @enum {string} */
                    by: "caller" | "timeout";
                    isError: boolean;
                }) | null;
            }[];
        };
        StandingBudget: {
            /** @enum {string} */
            scope: "parent" | "user";
            id: string;
            maxTokens: number | null;
            maxCostUsd: number | null;
            spent: {
                tokens: number;
                costMicroUsd: number;
            };
        };
        Webhook: {
            id: string;
            url: string;
            events: ("task.started" | "task.finished" | "task.paused" | "task.resumed" | "approval.requested" | "tool.requested")[];
            createdAt: string;
            failingSince: string | null;
            disabled: {
                at: string;
                reason: string;
            } | null;
        };
        CreatedWebhook: {
            id: string;
            url: string;
            events: ("task.started" | "task.finished" | "task.paused" | "task.resumed" | "approval.requested" | "tool.requested")[];
            createdAt: string;
            failingSince: string | null;
            disabled: {
                at: string;
                reason: string;
            } | null;
            secret: string;
        };
        WebhookList: {
            webhooks: components["schemas"]["Webhook"][];
        };
        WebhookDelivery: {
            id: string;
            /** @enum {string} */
            event: "task.started" | "task.finished" | "task.paused" | "task.resumed" | "approval.requested" | "tool.requested";
            taskId: string;
            attempts: number;
            /** @enum {string} */
            status: "pending" | "delivered" | "failed";
            lastError: string | null;
            createdAt: string;
            deliveredAt: string | null;
            nextAttemptAt: string | null;
        };
        WebhookDeliveryList: {
            deliveries: components["schemas"]["WebhookDelivery"][];
            nextCursor: string | null;
        };
        WebhookPayload: {
            /** @enum {string} */
            type: "task.started" | "task.finished" | "task.paused" | "task.resumed" | "approval.requested" | "tool.requested";
            timestamp: string;
            data: {
                taskId: string;
                status: string;
                parentTaskId: string;
                userId: string;
                toolCallId: string | null;
                sessionId: string;
            };
        };
        Artifact: {
            path: string;
            relativePath: string;
            size: number;
            /** @enum {string} */
            fsType: "file" | "directory" | "symlink";
            modifiedAt: string;
            url: string;
        };
        WorkspaceFile: {
            path: string;
            relativePath: string;
            size: number;
            /** @enum {string} */
            fsType: "file" | "directory" | "symlink";
            modifiedAt: string;
            url: string;
        };
        WorkspaceListing: {
            files: components["schemas"]["WorkspaceFile"][];
            truncated: boolean;
        };
        SkippedPath: {
            path: string;
            relativePath: string | null;
            /** @enum {string} */
            reason: "not_found" | "outside_workspace" | "invalid_path" | "not_a_regular_file" | "unreadable";
        };
        Usage: {
            inputTokens: number;
            outputTokens: number;
            totalTokens: number;
            cachedInputTokens: number;
            reasoningTokens: number;
            costMicroUsd: number | null;
        };
        UsageTotals: {
            tasks: number;
            steps: number;
            inputTokens: number;
            outputTokens: number;
            totalTokens: number;
            cachedInputTokens: number;
            reasoningTokens: number;
            costMicroUsd: number;
            unpricedTokens: number;
            durationMs: number;
        };
        UsageReport: {
            totals: components["schemas"]["UsageTotals"];
            groups: {
                tasks: number;
                steps: number;
                inputTokens: number;
                outputTokens: number;
                totalTokens: number;
                cachedInputTokens: number;
                reasoningTokens: number;
                costMicroUsd: number;
                unpricedTokens: number;
                durationMs: number;
                key: string;
            }[];
            nextCursor: string | null;
        };
        UsageRecord: {
            id: string;
            taskId: string;
            subagent_type: string;
            parentTaskId: string;
            userId: string;
            toolCallId: string | null;
            description: string;
            model: string | null;
            steps: number;
            inputTokens: number;
            outputTokens: number;
            totalTokens: number;
            cachedInputTokens: number;
            reasoningTokens: number;
            costMicroUsd: number | null;
            unpricedTokens: number;
            status: string;
            startedAt: string;
            completedAt: string | null;
            durationMs: number;
            usageReported: boolean;
        };
        UsageRecordList: {
            records: components["schemas"]["UsageRecord"][];
            nextCursor: string | null;
        };
        AgentSummary: {
            type: string;
            /** @enum {string} */
            kind: "model" | "shell" | "acp";
            description: string;
            model: string | null;
            fallbackModels?: string[];
            /** @enum {string} */
            effort?: "minimal" | "low" | "medium" | "high";
            topP?: number;
            maxOutputTokens?: number;
            maxSteps: number;
            maxDepth?: number;
            background?: boolean;
            tools: string[];
            compactionModel: string;
            compactAtTokens: number;
            permissions?: {
                [key: string]: "allow" | "ask" | "deny";
            };
            network?: "none" | {
                allow: string[];
                ask?: boolean;
            };
            image?: string;
            outcome?: {
                rubric?: string;
                verify?: {
                    command: string;
                    timeoutMs?: number;
                };
                maxIterations?: number;
                graderModel?: string;
            };
            omitProjectInstructions?: boolean;
            skills?: string[];
            /** @enum {string} */
            memory?: "user" | "parent" | "definition";
            mcpServers?: string[];
            hooks?: {
                PreToolUse?: {
                    matcher: string;
                    /** @enum {string} */
                    type: "command" | "url";
                }[];
                PostToolUse?: {
                    matcher: string;
                    /** @enum {string} */
                    type: "command" | "url";
                }[];
                Stop?: {
                    matcher: string;
                    /** @enum {string} */
                    type: "command" | "url";
                }[];
            };
        };
        StreamMessage: {
            seq: number;
            /** @constant */
            type: "task.started";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["TaskStartedData"];
        } | {
            seq: number;
            /** @constant */
            type: "step.started";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["StepStartedData"];
        } | {
            seq: number;
            /** @constant */
            type: "text.delta";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["TextDeltaData"];
        } | {
            seq: number;
            /** @constant */
            type: "tool.call";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["ToolCallData"];
        } | {
            seq: number;
            /** @constant */
            type: "tool.result";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["ToolResultData"];
        } | {
            seq: number;
            /** @constant */
            type: "step.finished";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["StepFinishedData"];
        } | {
            seq: number;
            /** @constant */
            type: "tool.replayed";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                step: number;
                toolCallId: string;
                toolName: string;
            };
        } | {
            seq: number;
            /** @constant */
            type: "replay.diverged";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                step: number;
                expected: {
                    toolName: string;
                    input: unknown;
                } | null;
                got: {
                    toolName: string;
                    input: unknown;
                };
            };
        } | {
            seq: number;
            /** @constant */
            type: "plan";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["PlanData"];
        } | {
            seq: number;
            /** @constant */
            type: "message.received";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["MessageReceivedData"];
        } | {
            seq: number;
            /** @constant */
            type: "context.compacted";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["ContextCompactedData"];
        } | {
            seq: number;
            /** @constant */
            type: "task.resumed";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["TaskResumedData"];
        } | {
            seq: number;
            /** @constant */
            type: "task.paused";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["Pause"];
        } | {
            seq: number;
            /** @constant */
            type: "model.fallback";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                step: number;
                from: string;
                to: string;
                reason: string;
            };
        } | {
            seq: number;
            /** @constant */
            type: "approval.requested";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                requestId: string;
                toolCallId: string;
                toolName: string;
                input: unknown;
            };
        } | {
            seq: number;
            /** @constant */
            type: "approval.answered";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                requestId: string;
                /** @enum {string} */
                decision: "allow" | "deny";
                /** @enum {string} */
                by: "caller" | "timeout";
            };
        } | {
            seq: number;
            /** @constant */
            type: "tool.requested";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                requestId: string;
                toolCallId: string;
                toolName: string;
                input: unknown;
            };
        } | {
            seq: number;
            /** @constant */
            type: "tool.answered";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                requestId: string;
                /** @enum {string} */
                by: "caller" | "timeout";
                isError: boolean;
            };
        } | {
            seq: number;
            /** @constant */
            type: "network.request";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                host: string;
                port: number;
                allowed: boolean;
                bytesIn: number;
                bytesOut: number;
                reason?: string;
            };
        } | {
            seq: number;
            /** @constant */
            type: "hook.ran";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                step: number;
                /** @enum {string} */
                event: "PreToolUse" | "PostToolUse" | "Stop";
                matcher: string;
                toolCallId: string;
                toolName: string;
                /** @enum {string} */
                decision: "none" | "allow" | "deny" | "ask" | "block" | "failed" | "timeout";
                reason?: string;
                updatedInput?: unknown;
                durationMs: number;
            };
        } | {
            seq: number;
            /** @constant */
            type: "outcome.evaluated";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                iteration: number;
                satisfied: boolean;
                criteria: {
                    name: string;
                    passed: boolean;
                    note: string;
                }[];
                /** @enum {string} */
                by: "verify" | "grader";
            };
        } | {
            seq: number;
            /** @constant */
            type: "candidate.started";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                taskId: string;
                model: string | null;
                index: number;
            };
        } | {
            seq: number;
            /** @constant */
            type: "candidate.finished";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                taskId: string;
                /** @enum {string} */
                status: "completed" | "aborted" | "error";
                outcome: {
                    /** @enum {string} */
                    status: "satisfied" | "failed" | "max_iterations_reached";
                    iterations: number;
                    criteria: {
                        name: string;
                        passed: boolean;
                        note: string;
                    }[];
                    feedback: string | null;
                } | null;
                costMicroUsd: number;
            };
        } | {
            seq: number;
            /** @constant */
            type: "candidate.selected";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: {
                taskId: string;
                reason: string;
            };
        } | {
            seq: number;
            /** @constant */
            type: "task.finished";
            taskId: string;
            parentSeq?: number;
            at: string;
            data: components["schemas"]["Task"];
        } | components["schemas"]["Heartbeat"];
        Heartbeat: {
            /** @constant */
            type: "heartbeat";
            taskId?: string;
            at: string;
            data: {
                /** @enum {string} */
                phase?: "queued" | "model" | "tool" | "paused";
                step?: number;
                tool?: string;
                /** @enum {string} */
                reason?: "budget" | "approval" | "tool";
                pending?: {
                    requestId: string;
                    toolCallId: string;
                    toolName: string;
                    input: unknown;
                    /** @enum {string} */
                    kind: "approval" | "tool";
                }[];
                phaseSince?: string;
                lastActivityAt?: string;
                usage?: components["schemas"]["Usage"];
                lastSeq: number;
                intervalMs?: number;
            };
        };
        TaskStartedData: {
            subagent_type: string;
            model: string | null;
            workspace: string;
            skills?: string[];
            memory?: {
                /** @enum {string} */
                scope: "user" | "parent" | "definition";
                key: string;
                type: string;
                url: string;
            };
        };
        StepStartedData: {
            step: number;
        };
        TextDeltaData: {
            step: number;
            text: string;
        };
        ToolCallData: {
            step: number;
            toolCallId: string;
            toolName: string;
            input: unknown;
        };
        ToolResultData: {
            step: number;
            toolCallId: string;
            toolName: string;
            output: unknown;
            isError: boolean;
        };
        StepFinishedData: {
            step: number;
            finishReason: string;
            usage: components["schemas"]["Usage"];
        };
        PlanData: {
            step: number;
            entries: {
                content: string;
                priority: string;
                status: string;
            }[];
        };
        MessageReceivedData: {
            text: string;
        };
        ContextCompactedData: {
            beforeTokens: number;
            afterTokens: number;
            model: string;
        };
        TaskResumedData: {
            fromStep: number;
            attempt: number;
            /** @enum {string} */
            reason: "restart" | "budget" | "approval";
        };
        TaskToolArgs: {
            subagent_type: string;
            description: string;
            prompt: string;
            run_in_background?: boolean;
        };
        ChildOutput: {
            task_id: string;
            /** @enum {string} */
            status: "queued" | "running" | "paused" | "completed" | "aborted" | "error";
            summary: string | null;
            output: unknown;
            artifacts: {
                relativePath: string;
                size: number;
                /** @enum {string} */
                fsType: "file" | "directory" | "symlink";
            }[];
            changes?: {
                added: string[];
                modified: string[];
                deleted: string[];
            };
            error?: components["schemas"]["TaskError"];
        };
        BackgroundStarted: {
            task_id: string;
            /** @enum {string} */
            status: "queued" | "running" | "paused" | "completed" | "aborted" | "error";
        };
        WaitArgs: {
            task_ids?: string[];
            timeoutMs?: number;
        };
        WaitResult: {
            finished: components["schemas"]["ChildOutput"][];
            running: {
                task_id: string;
                /** @enum {string} */
                status: "queued" | "running" | "paused" | "completed" | "aborted" | "error";
                description: string;
            }[];
            timedOut: boolean;
        };
        SendInputArgs: {
            task_id: string;
            message: string;
        };
        SendInputResult: {
            task_id: string;
            /** @enum {string} */
            status: "queued" | "running" | "paused" | "completed" | "aborted" | "error";
            /** @constant */
            delivered: "before its next step";
        } | {
            task_id: string;
            /** @enum {string} */
            status: "queued" | "running" | "paused" | "completed" | "aborted" | "error";
            continues: string;
        };
        CloseAgentArgs: {
            task_id: string;
        };
        CreateTaskBody: {
            task_id?: string;
            /** @default fork */
            subagent_type: string;
            description: string;
            prompt?: string;
            command?: string;
            context: components["schemas"]["TaskContextInput"];
            options?: components["schemas"]["TaskOptions"];
            fork?: {
                system: string;
                messages: components["schemas"]["ModelMessageInput"][];
            };
        };
        SteeringBody: {
            prompt: string;
        };
        ResumeBody: {
            budget?: components["schemas"]["TaskBudget"];
        };
        StandingBudgetBody: {
            maxTokens?: number | null;
            maxCostUsd?: number | null;
        };
        CreateWebhookBody: {
            /** Format: uri */
            url: string;
            events?: ("task.started" | "task.finished" | "task.paused" | "task.resumed" | "approval.requested" | "tool.requested")[];
        };
        TaskBudget: {
            maxTokens?: number;
            maxCostUsd?: number;
            maxDurationMs?: number;
        };
        TaskOptions: {
            model?: string | string[];
            maxSteps?: number;
            /** @enum {string} */
            effort?: "minimal" | "low" | "medium" | "high";
            topP?: number;
            maxOutputTokens?: number;
            timeoutMs?: number;
            outputSchema?: {
                [key: string]: unknown;
            };
            budget?: components["schemas"]["TaskBudget"];
            permissions?: {
                [key: string]: "allow" | "ask" | "deny";
            };
            approvalTimeoutMs?: number;
            clientTools?: {
                name: string;
                description: string;
                inputSchema: {
                    [key: string]: unknown;
                };
            }[];
            tools?: string[];
            skills?: string[];
            cwd?: string;
            network?: "none" | {
                allow: string[];
                ask?: boolean;
            };
            /** @enum {string} */
            isolation?: "shared" | "worktree";
            outcome?: {
                rubric?: string;
                verify?: {
                    command: string;
                    timeoutMs?: number;
                };
                maxIterations?: number;
                graderModel?: string;
            };
            candidates?: {
                n: number;
                models?: string[];
                /** @enum {string} */
                pick?: "first_satisfied" | "best";
            };
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The service can take tasks */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        status: "ok";
                    };
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getMetrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metrics in the Prometheus text format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listAgents: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every subagent type this service runs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        agents: components["schemas"]["AgentSummary"][];
                    };
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listSkills: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every valid skill, by name */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        skills: {
                            name: string;
                            description: string;
                            license?: string;
                            compatibility?: string;
                            promptBytes: number;
                            agents: string[];
                        }[];
                    };
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listTasks: {
        parameters: {
            query?: {
                parentTaskId?: string;
                userId?: string;
                status?: "queued" | "running" | "paused" | "completed" | "aborted" | "error";
                sessionId?: string;
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of tasks; pass nextCursor as cursor for the next */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskList"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createTask: {
        parameters: {
            query?: {
                wait?: "true" | "false";
            };
            header?: {
                "idempotency-key"?: string;
                traceparent?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateTaskBody"];
            };
        };
        responses: {
            /** @description With ?wait=true: the task once it ended. Without: the task an earlier request with this Idempotency-Key created */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            /** @description Accepted: queued or running; follow it on streamUrl or with GET /tasks/{id} */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskAccepted"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The disk that holds the database is full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getTask: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The task */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    purgeTask: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The task, purged: true */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Outside the key's role (forbidden): read keys only read, submit keys may not delete or change budgets, webhooks and keys */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    cancelTask: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The task: ended `aborted` if it was queued or running, else as it was */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The disk that holds the database is full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getTaskMessages: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The conversation, oldest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskMessages"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    steerTask: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SteeringBody"];
            };
        };
        responses: {
            /** @description Accepted: delivered before the next step */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {boolean} */
                        accepted: true;
                    };
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    resumeTask: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ResumeBody"] | null;
            };
        };
        responses: {
            /** @description The task, running again (or queued for a slot) */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    answerApproval: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                requestId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @enum {string} */
                    decision: "allow" | "deny";
                    message?: string;
                    input?: {
                        [key: string]: unknown;
                    };
                };
            };
        };
        responses: {
            /** @description The task as it is now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    submitToolResult: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                requestId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    output: unknown;
                } | {
                    error: string;
                };
            };
        };
        responses: {
            /** @description The task as it is now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Task"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    applyTaskChanges: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Applied: every path written or removed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        applied: string[];
                    };
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The worktree copy of the task was removed (applied, or past WORKTREE_TTL_MS) */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getTaskChangesDiff: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The diff (text/x-diff) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/x-diff": string;
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The worktree copy of the task was removed (applied, or past WORKTREE_TTL_MS) */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getTaskFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The file, with a Content-Type from its extension (application/octet-stream otherwise) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": string;
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A segment of the URL, or a name in a workspace path, is too long (uri_too_long) */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    replayTask: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    model?: string | string[];
                    subagent_type?: string;
                    /**
                     * @default recorded
                     * @enum {string}
                     */
                    tools?: "recorded" | "live";
                };
            };
        };
        responses: {
            /** @description Accepted: the replay, queued or running; follow it on streamUrl */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskAccepted"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The disk that holds the database is full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listReplays: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of batches */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        batches: {
                            id: string;
                            createdAt: string;
                            variants: {
                                model?: string | string[];
                                subagent_type?: string;
                            }[];
                            replays: number;
                        }[];
                        nextCursor: string | null;
                    };
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    startReplays: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    taskIds?: string[];
                    filter?: {
                        parentTaskId?: string;
                        subagent_type?: string;
                        /** Format: date-time */
                        from?: string;
                        /** Format: date-time */
                        to?: string;
                    };
                    variants: {
                        model?: string | string[];
                        subagent_type?: string;
                    }[];
                    /**
                     * @default recorded
                     * @enum {string}
                     */
                    tools?: "recorded" | "live";
                };
            };
        };
        responses: {
            /** @description Accepted: the batch */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                    };
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The disk that holds the database is full */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getReplays: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The batch as it is now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                        /** @enum {string} */
                        status: "running" | "completed";
                        createdAt: string;
                        rows: {
                            taskId: string;
                            variant: {
                                model?: string | string[];
                                subagent_type?: string;
                            };
                            replayTaskId: string | null;
                            status: ("queued" | "running" | "paused" | "completed" | "aborted" | "error") | "refused" | "not_started";
                            replay: {
                                of: string;
                                /** @enum {string} */
                                tools: "recorded" | "live";
                                divergedAtStep: number | null;
                                comparison: {
                                    steps: {
                                        original: number;
                                        replay: number;
                                    };
                                    inputTokens: {
                                        original: number;
                                        replay: number;
                                    };
                                    outputTokens: {
                                        original: number;
                                        replay: number;
                                    };
                                    costMicroUsd: {
                                        original: number;
                                        replay: number;
                                    };
                                    sameSummary: boolean;
                                    artifacts: {
                                        same: string[];
                                        changed: string[];
                                        missing: string[];
                                    };
                                } | null;
                            } | null;
                            error: {
                                code: string;
                                message: string;
                            } | null;
                        }[];
                    };
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    mcpStream: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no content */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    mcp: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no content */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    mcpEndSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no content */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getUsage: {
        parameters: {
            query?: {
                userId?: string;
                parentTaskId?: string;
                subagent_type?: string;
                model?: string;
                from?: string;
                to?: string;
                groupBy?: "user" | "parentTask" | "subagentType" | "model" | "day";
                source?: "auto" | "records";
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The sums over the matching records */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UsageReport"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listUsageRecords: {
        parameters: {
            query?: {
                userId?: string;
                parentTaskId?: string;
                subagent_type?: string;
                model?: string;
                from?: string;
                to?: string;
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of records; pass nextCursor as cursor for the next */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UsageRecordList"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getBudget: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                scope: "parent" | "user";
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The budget and what the scope has spent */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StandingBudget"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    putBudget: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                scope: "parent" | "user";
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["StandingBudgetBody"];
            };
        };
        responses: {
            /** @description The budget and what the scope has spent */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StandingBudget"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteBudget: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                scope: "parent" | "user";
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWebhooks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoints */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookList"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CreateWebhookBody"];
            };
        };
        responses: {
            /** @description The endpoint, with its secret (shown only here) */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedWebhook"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    enableWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The endpoint */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Webhook"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteWebhook: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWebhookDeliveries: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description One page of deliveries; pass nextCursor as cursor for the next */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDeliveryList"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    retryWebhookDelivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                deliveryId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The delivery, pending */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WebhookDelivery"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getAgentCard: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The agent card (A2A v1.0, with the v0.3 fields too) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        [key: string]: unknown;
                    };
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    a2aJsonRpc: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    [key: string]: unknown;
                };
            };
        };
        responses: {
            /** @description A JSON-RPC response, or a text/event-stream of them for the streaming methods */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        [key: string]: unknown;
                    };
                    "text/event-stream": string;
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listWorkspace: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                parentTaskId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The workspace's entries */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkspaceListing"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A segment of the URL, or a name in a workspace path, is too long (uri_too_long) */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getWorkspaceFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                parentTaskId: string;
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The file, with a Content-Type from its extension (application/octet-stream otherwise) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": string;
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A segment of the URL, or a name in a workspace path, is too long (uri_too_long) */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    putWorkspaceFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                parentTaskId: string;
                path: string;
            };
            cookie?: never;
        };
        /** @description The file's bytes, as they are (whatever the Content-Type) */
        requestBody: {
            content: {
                "application/octet-stream": string;
            };
        };
        responses: {
            /** @description An existing file was replaced */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkspaceFile"];
                };
            };
            /** @description The file was created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkspaceFile"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A segment of the URL, or a name in a workspace path, is too long (uri_too_long) */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The workspace disk is full (or its quota spent): nothing was changed; retry after Retry-After seconds */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteWorkspaceFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                parentTaskId: string;
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A segment of the URL, or a name in a workspace path, is too long (uri_too_long) */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getMemoryFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                scope: "user" | "parent" | "definition";
                key: string;
                type: string;
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The file (its Content-Type from its extension), or for an empty path the listing, as JSON */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": string;
                    "application/json": {
                        files: components["schemas"]["WorkspaceFile"][];
                        truncated: boolean;
                        bytes: number;
                    };
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A segment of the URL, or a name in a workspace path, is too long (uri_too_long) */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    putMemoryFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                scope: "user" | "parent" | "definition";
                key: string;
                type: string;
                path: string;
            };
            cookie?: never;
        };
        /** @description The file's bytes, as they are */
        requestBody: {
            content: {
                "application/octet-stream": string;
            };
        };
        responses: {
            /** @description An existing file was replaced */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkspaceFile"];
                };
            };
            /** @description The file was created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkspaceFile"];
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Outside the key's role (forbidden): read keys only read, submit keys may not delete or change budgets, webhooks and keys */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A segment of the URL, or a name in a workspace path, is too long (uri_too_long) */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The disk is full: nothing was changed; retry after Retry-After seconds */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    deleteMemoryFile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                scope: "user" | "parent" | "definition";
                key: string;
                type: string;
                path: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Outside the key's role (forbidden): read keys only read, submit keys may not delete or change budgets, webhooks and keys */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A segment of the URL, or a name in a workspace path, is too long (uri_too_long) */
            414: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    eraseUser: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                userId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description What was purged */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        tasks: number;
                        events: number;
                        memories: number;
                        erasedAs: string;
                    };
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Outside the key's role (forbidden): read keys only read, submit keys may not delete or change budgets, webhooks and keys */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listAudit: {
        parameters: {
            query?: {
                limit?: number;
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of the audit log */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        entries: {
                            id: string;
                            at: string;
                            key: string;
                            action: string;
                            target: string;
                        }[];
                        nextCursor: string | null;
                    };
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Outside the key's role (forbidden): read keys only read, submit keys may not delete or change budgets, webhooks and keys */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    listKeys: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The keys */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        keys: {
                            id: string;
                            tenant: string;
                            /** @enum {string} */
                            role: "admin" | "submit" | "read";
                            name: string | null;
                            fingerprint: string;
                            createdAt: string;
                            revokedAt: string | null;
                        }[];
                    };
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Outside the key's role (forbidden): read keys only read, submit keys may not delete or change budgets, webhooks and keys */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createKey: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @default submit
                     * @enum {string}
                     */
                    role?: "admin" | "submit" | "read";
                    name?: string;
                };
            };
        };
        responses: {
            /** @description The key (its only appearance) and what it is */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        id: string;
                        tenant: string;
                        /** @enum {string} */
                        role: "admin" | "submit" | "read";
                        name: string | null;
                        fingerprint: string;
                        createdAt: string;
                        revokedAt: string | null;
                        key: string;
                    };
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Outside the key's role (forbidden): read keys only read, submit keys may not delete or change budgets, webhooks and keys */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description This Idempotency-Key was already used with a different body */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is larger than BODY_LIMIT_BYTES */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The body is not application/json */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    revokeKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Done; no content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Outside the key's role (forbidden): read keys only read, submit keys may not delete or change budgets, webhooks and keys */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    streamTask: {
        parameters: {
            query?: {
                after?: string;
            };
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Switching Protocols: the socket carries StreamMessage texts (see x-websocket) */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A WebSocket route called without `Upgrade: websocket` */
            426: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    streamParent: {
        parameters: {
            query: {
                parentTaskId: string;
                after?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Switching Protocols: the socket carries StreamMessage texts (see x-websocket) */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A WebSocket route called without `Upgrade: websocket` */
            426: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    taskEvents: {
        parameters: {
            query?: {
                after?: string;
            };
            header?: {
                "last-event-id"?: string;
            };
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description An event stream: each event `id: <cursor>`, `event: <type>`, `data: <StreamMessage JSON>` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description Done; no content */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description No such task, workspace, file or route for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    parentEvents: {
        parameters: {
            query: {
                parentTaskId: string;
                after?: string;
            };
            header?: {
                "last-event-id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description An event stream: each event `id: <cursor>`, `event: <type>`, `data: <StreamMessage JSON>` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description Invalid request: `error.details` names each field and what is wrong with it */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or wrong API key (only while API_KEYS is set) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description A rate limit, queue limit or auth-failure limit was reached; retry after Retry-After seconds */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description An unexpected failure of the service */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Shutting down, overloaded, or the database cannot be written; retry after Retry-After seconds */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    taskEvent: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WebhookPayload"];
            };
        };
        responses: {
            /** @description Received */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
        };
    };
}
