CREATE TABLE `usage_rollups` (
	`tenant` text NOT NULL,
	`dim` text NOT NULL,
	`key` text NOT NULL,
	`day` text NOT NULL,
	`tasks` integer DEFAULT 0 NOT NULL,
	`steps` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`total_tokens` integer DEFAULT 0 NOT NULL,
	`cached_input_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`cost_micro_usd` integer DEFAULT 0 NOT NULL,
	`unpriced_tokens` integer DEFAULT 0 NOT NULL,
	`duration_ms` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`tenant`, `dim`, `day`, `key`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `usage_rollups_by_key` ON `usage_rollups` (`tenant`,`dim`,`key`,`day`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`webhook_id` text NOT NULL,
	`tenant` text NOT NULL,
	`event` text NOT NULL,
	`task_id` text NOT NULL,
	`payload` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`last_error` text,
	`created_at` integer NOT NULL,
	`delivered_at` integer
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due` ON `webhook_deliveries` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_of` ON `webhook_deliveries` (`webhook_id`,`id`);--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant` text NOT NULL,
	`url` text NOT NULL,
	`events` text NOT NULL,
	`secret` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhooks_tenant` ON `webhooks` (`tenant`,`id`);--> statement-breakpoint
INSERT INTO usage_rollups (tenant, dim, key, day, tasks, steps, input_tokens, output_tokens, total_tokens, cached_input_tokens, reasoning_tokens, cost_micro_usd, unpriced_tokens, duration_ms) SELECT tenant, 'all', '', strftime('%Y-%m-%d', started_at / 1000, 'unixepoch'), count(*) AS tasks, sum(steps) AS steps, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, sum(cached_input_tokens) AS cached_input_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost_micro_usd) AS cost_micro_usd, sum(unpriced_tokens) AS unpriced_tokens, sum(duration_ms) AS duration_ms FROM subagent_records GROUP BY tenant, '', strftime('%Y-%m-%d', started_at / 1000, 'unixepoch') UNION ALL SELECT tenant, 'all', '', '*', count(*) AS tasks, sum(steps) AS steps, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, sum(cached_input_tokens) AS cached_input_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost_micro_usd) AS cost_micro_usd, sum(unpriced_tokens) AS unpriced_tokens, sum(duration_ms) AS duration_ms FROM subagent_records GROUP BY tenant, '', '*' UNION ALL SELECT tenant, 'user', user_id, strftime('%Y-%m-%d', started_at / 1000, 'unixepoch'), count(*) AS tasks, sum(steps) AS steps, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, sum(cached_input_tokens) AS cached_input_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost_micro_usd) AS cost_micro_usd, sum(unpriced_tokens) AS unpriced_tokens, sum(duration_ms) AS duration_ms FROM subagent_records GROUP BY tenant, user_id, strftime('%Y-%m-%d', started_at / 1000, 'unixepoch') UNION ALL SELECT tenant, 'user', user_id, '*', count(*) AS tasks, sum(steps) AS steps, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, sum(cached_input_tokens) AS cached_input_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost_micro_usd) AS cost_micro_usd, sum(unpriced_tokens) AS unpriced_tokens, sum(duration_ms) AS duration_ms FROM subagent_records GROUP BY tenant, user_id, '*' UNION ALL SELECT tenant, 'parent', parent_task_id, strftime('%Y-%m-%d', started_at / 1000, 'unixepoch'), count(*) AS tasks, sum(steps) AS steps, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, sum(cached_input_tokens) AS cached_input_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost_micro_usd) AS cost_micro_usd, sum(unpriced_tokens) AS unpriced_tokens, sum(duration_ms) AS duration_ms FROM subagent_records GROUP BY tenant, parent_task_id, strftime('%Y-%m-%d', started_at / 1000, 'unixepoch') UNION ALL SELECT tenant, 'parent', parent_task_id, '*', count(*) AS tasks, sum(steps) AS steps, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, sum(cached_input_tokens) AS cached_input_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost_micro_usd) AS cost_micro_usd, sum(unpriced_tokens) AS unpriced_tokens, sum(duration_ms) AS duration_ms FROM subagent_records GROUP BY tenant, parent_task_id, '*' UNION ALL SELECT tenant, 'type', subagent_type, strftime('%Y-%m-%d', started_at / 1000, 'unixepoch'), count(*) AS tasks, sum(steps) AS steps, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, sum(cached_input_tokens) AS cached_input_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost_micro_usd) AS cost_micro_usd, sum(unpriced_tokens) AS unpriced_tokens, sum(duration_ms) AS duration_ms FROM subagent_records GROUP BY tenant, subagent_type, strftime('%Y-%m-%d', started_at / 1000, 'unixepoch') UNION ALL SELECT tenant, 'type', subagent_type, '*', count(*) AS tasks, sum(steps) AS steps, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, sum(cached_input_tokens) AS cached_input_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost_micro_usd) AS cost_micro_usd, sum(unpriced_tokens) AS unpriced_tokens, sum(duration_ms) AS duration_ms FROM subagent_records GROUP BY tenant, subagent_type, '*' UNION ALL SELECT tenant, 'model', coalesce(model, ''), strftime('%Y-%m-%d', started_at / 1000, 'unixepoch'), count(*) AS tasks, sum(steps) AS steps, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, sum(cached_input_tokens) AS cached_input_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost_micro_usd) AS cost_micro_usd, sum(unpriced_tokens) AS unpriced_tokens, sum(duration_ms) AS duration_ms FROM subagent_records GROUP BY tenant, coalesce(model, ''), strftime('%Y-%m-%d', started_at / 1000, 'unixepoch') UNION ALL SELECT tenant, 'model', coalesce(model, ''), '*', count(*) AS tasks, sum(steps) AS steps, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(total_tokens) AS total_tokens, sum(cached_input_tokens) AS cached_input_tokens, sum(reasoning_tokens) AS reasoning_tokens, sum(cost_micro_usd) AS cost_micro_usd, sum(unpriced_tokens) AS unpriced_tokens, sum(duration_ms) AS duration_ms FROM subagent_records GROUP BY tenant, coalesce(model, ''), '*';