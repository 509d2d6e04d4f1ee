CREATE TABLE `usage_reports` (
	`task_id` text NOT NULL,
	`n` integer NOT NULL,
	`step` integer NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`total_tokens` integer DEFAULT 0 NOT NULL,
	`cached_input_tokens` integer DEFAULT 0 NOT NULL,
	`reasoning_tokens` integer DEFAULT 0 NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY(`task_id`, `n`)
);
