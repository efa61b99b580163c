ALTER TABLE `columns` ADD `read_by` text;--> statement-breakpoint
-- Columns made before read_by existed stored fhir_path and source_field equal when only one was
-- given. Columns whose two paths differ, or that read a panel with a FHIR source, keep reading by
-- FHIRPath; the rest read their source field exactly (docs/views-and-rows.md "Exact values").
UPDATE `columns` SET `read_by` = CASE
  WHEN `fhir_path` IS NOT NULL AND (`source_field` IS NULL OR `fhir_path` <> `source_field`) THEN 'fhirPath'
  WHEN EXISTS (
    SELECT 1 FROM `data_sources` d
    WHERE d.`panel_id` = `columns`.`panel_id` AND d.`type` = 'fhir'
      AND (`columns`.`data_source_id` IS NULL OR d.`id` = `columns`.`data_source_id`)
  ) THEN 'fhirPath'
  ELSE 'sourceField'
END
WHERE `column_type` = 'base';
--> statement-breakpoint
-- Every panel's rows were materialised under the old value rules ("" and [] as null, one-element
-- arrays unwrapped): mark them stale so the scheduler recomputes them from their stored records.
UPDATE `panels` SET `columns_version` = `columns_version` + 1 WHERE `deleted_at` IS NULL;
