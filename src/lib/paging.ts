/**
 * What a list answered: `total` matching items, and the page of them when one was asked for. With
 * no `limit` the answer is the whole list as its one and only page.
 */
export interface ListedPage {
  total: number
  page: number
  limit?: number
}
