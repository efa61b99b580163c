CREATE TABLE `access_records` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` text NOT NULL,
	`tenant_id` text NOT NULL,
	`user_id` text NOT NULL,
	`action` text NOT NULL,
	`panel_id` integer,
	`view_id` integer,
	`data_source_id` integer,
	`row_count` integer NOT NULL,
	`query` text NOT NULL,
	`path` text NOT NULL,
	`request_id` text NOT NULL,
	`ip` text,
	`user_agent` text,
	`outcome` text NOT NULL,
	`status` integer NOT NULL,
	`error_code` text
);
--> statement-breakpoint
CREATE INDEX `access_records_tenant_at_idx` ON `access_records` (`tenant_id`,`at`);--> statement-breakpoint
CREATE INDEX `access_records_tenant_user_idx` ON `access_records` (`tenant_id`,`user_id`,`at`);--> statement-breakpoint
CREATE INDEX `access_records_tenant_panel_idx` ON `access_records` (`tenant_id`,`panel_id`,`at`);--> statement-breakpoint
CREATE INDEX `access_records_tenant_view_idx` ON `access_records` (`tenant_id`,`view_id`,`at`);