CREATE TABLE `viewdefinition_exports` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`user_id` text NOT NULL,
	`status` text NOT NULL,
	`request` text NOT NULL,
	`params` text NOT NULL,
	`views` text NOT NULL,
	`cursor` text NOT NULL,
	`error` text,
	`lease_id` text,
	`lease_expires_at` text,
	`created_at` text NOT NULL,
	`finished_at` text,
	`expires_at` text
);
--> statement-breakpoint
CREATE INDEX `viewdefinition_exports_tenant_idx` ON `viewdefinition_exports` (`tenant_id`,`user_id`);--> statement-breakpoint
CREATE INDEX `viewdefinition_exports_status_idx` ON `viewdefinition_exports` (`status`,`lease_expires_at`);