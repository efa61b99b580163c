CREATE TABLE `changes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`user_id` text NOT NULL,
	`panel_id` integer NOT NULL,
	`entity_type` text NOT NULL,
	`entity_id` integer NOT NULL,
	`action` text NOT NULL,
	`changes` text NOT NULL,
	`metadata` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `changes_tenant_created_idx` ON `changes` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `changes_tenant_panel_idx` ON `changes` (`tenant_id`,`panel_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `columns` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`user_id` text NOT NULL,
	`panel_id` integer NOT NULL,
	`column_type` text NOT NULL,
	`name` text NOT NULL,
	`type` text NOT NULL,
	`source_field` text,
	`fhir_path` text,
	`data_source_id` integer,
	`formula` text,
	`dependencies` text,
	`properties` text NOT NULL,
	`metadata` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`panel_id`) REFERENCES `panels`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `columns_tenant_panel_idx` ON `columns` (`tenant_id`,`panel_id`);--> statement-breakpoint
CREATE TABLE `data_sources` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`user_id` text NOT NULL,
	`panel_id` integer NOT NULL,
	`type` text NOT NULL,
	`config` text NOT NULL,
	`sync_status` text DEFAULT 'pending' NOT NULL,
	`error_message` text,
	`last_sync_at` text,
	`next_sync_at` text,
	`current_generation` integer DEFAULT 0 NOT NULL,
	`lease_run_id` integer,
	`lease_expires_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`panel_id`) REFERENCES `panels`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `data_sources_tenant_panel_idx` ON `data_sources` (`tenant_id`,`panel_id`);--> statement-breakpoint
CREATE INDEX `data_sources_next_sync_idx` ON `data_sources` (`next_sync_at`);--> statement-breakpoint
CREATE TABLE `notifications` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`user_id` text NOT NULL,
	`view_id` integer NOT NULL,
	`type` text NOT NULL,
	`impact` text NOT NULL,
	`message` text NOT NULL,
	`is_read` integer DEFAULT false NOT NULL,
	`dedupe_key` text,
	`created_at` text NOT NULL,
	`read_at` text
);
--> statement-breakpoint
CREATE INDEX `notifications_tenant_user_idx` ON `notifications` (`tenant_id`,`user_id`,`is_read`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `notifications_dedupe_idx` ON `notifications` (`tenant_id`,`user_id`,`dedupe_key`);--> statement-breakpoint
CREATE TABLE `panels` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`user_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`metadata` text,
	`cohort_rule` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`deleted_at` text
);
--> statement-breakpoint
CREATE INDEX `panels_tenant_user_idx` ON `panels` (`tenant_id`,`user_id`);--> statement-breakpoint
CREATE INDEX `panels_tenant_created_idx` ON `panels` (`tenant_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `records` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`panel_id` integer NOT NULL,
	`data_source_id` integer NOT NULL,
	`generation` integer NOT NULL,
	`key` text NOT NULL,
	`data` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`data_source_id`) REFERENCES `data_sources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `records_source_generation_key_idx` ON `records` (`data_source_id`,`generation`,`key`);--> statement-breakpoint
CREATE INDEX `records_tenant_panel_idx` ON `records` (`tenant_id`,`panel_id`);--> statement-breakpoint
CREATE TABLE `sync_runs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`data_source_id` integer NOT NULL,
	`status` text NOT NULL,
	`trigger` text NOT NULL,
	`generation` integer NOT NULL,
	`started_at` text NOT NULL,
	`finished_at` text,
	`duration_ms` integer,
	`rows_read` integer DEFAULT 0 NOT NULL,
	`rows_written` integer DEFAULT 0 NOT NULL,
	`rows_deleted` integer DEFAULT 0 NOT NULL,
	`truncated` integer DEFAULT false NOT NULL,
	`cancel_requested` integer DEFAULT false NOT NULL,
	`error` text,
	FOREIGN KEY (`data_source_id`) REFERENCES `data_sources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `sync_runs_tenant_source_idx` ON `sync_runs` (`tenant_id`,`data_source_id`,`id`);--> statement-breakpoint
CREATE TABLE `views` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`user_id` text NOT NULL,
	`panel_id` integer NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`config` text NOT NULL,
	`metadata` text NOT NULL,
	`filters` text NOT NULL,
	`sorting` text NOT NULL,
	`column_visibility` text NOT NULL,
	`aggregations` text NOT NULL,
	`is_published` integer DEFAULT false NOT NULL,
	`published_at` text,
	`published_by` text,
	`publish_config` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`accessed_at` text,
	FOREIGN KEY (`panel_id`) REFERENCES `panels`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `views_tenant_user_idx` ON `views` (`tenant_id`,`user_id`);--> statement-breakpoint
CREATE INDEX `views_tenant_panel_idx` ON `views` (`tenant_id`,`panel_id`);