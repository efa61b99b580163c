ALTER TABLE `panels` ADD `view_definition` text;--> statement-breakpoint
ALTER TABLE `panels` ADD `view_data_source_id` integer;--> statement-breakpoint
ALTER TABLE `records` ADD `record_key` text;--> statement-breakpoint
CREATE INDEX `records_source_generation_record_key_idx` ON `records` (`data_source_id`,`generation`,`record_key`) WHERE record_key IS NOT NULL;