CREATE TABLE `view_password_failures` (
	`tenant_id` text NOT NULL,
	`view_id` integer NOT NULL,
	`user_id` text NOT NULL,
	`count` integer NOT NULL,
	`window_ends_at` text NOT NULL,
	PRIMARY KEY(`tenant_id`, `view_id`, `user_id`)
);
--> statement-breakpoint
CREATE INDEX `view_password_failures_window_idx` ON `view_password_failures` (`window_ends_at`);