ALTER TABLE `panels` ADD `default_view_id` integer;--> statement-breakpoint
ALTER TABLE `views` ADD `source_view_id` integer;