CREATE TABLE `event_sequences` (
	`tenant_id` text PRIMARY KEY NOT NULL,
	`last_seq` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`seq` integer NOT NULL,
	`type` text NOT NULL,
	`occurred_at` text NOT NULL,
	`panel_id` integer,
	`view_id` integer,
	`data_source_id` integer,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `events_tenant_seq_idx` ON `events` (`tenant_id`,`seq`);--> statement-breakpoint
CREATE INDEX `events_tenant_panel_idx` ON `events` (`tenant_id`,`panel_id`,`seq`);--> statement-breakpoint
CREATE INDEX `events_tenant_view_idx` ON `events` (`tenant_id`,`view_id`,`seq`);--> statement-breakpoint
CREATE TABLE `pending_changes` (
	`token` text NOT NULL,
	`view_id` integer NOT NULL,
	`data_source_id` integer NOT NULL,
	`key` text NOT NULL,
	`kind` text NOT NULL,
	`row_id` integer,
	`row` text,
	`changed` text,
	PRIMARY KEY(`token`, `view_id`, `data_source_id`, `key`)
);
--> statement-breakpoint
CREATE TABLE `view_members` (
	`view_id` integer NOT NULL,
	`data_source_id` integer NOT NULL,
	`key` text NOT NULL,
	`tenant_id` text NOT NULL,
	`panel_id` integer NOT NULL,
	`row_id` integer NOT NULL,
	`row` text NOT NULL,
	PRIMARY KEY(`view_id`, `data_source_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `view_members_panel_idx` ON `view_members` (`panel_id`,`data_source_id`,`key`);--> statement-breakpoint
ALTER TABLE `views` ADD `membership_key` text;