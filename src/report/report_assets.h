/*
 * The report page template, stylesheet and viewer scripts, embedded at
 * build time from page.html, viewer.css, viewer.js and diff.js by
 * embed_assets.py (generated report_assets.c).  NUL-terminated UTF-8.
 */
#ifndef DF_REPORT_REPORT_ASSETS_H
#define DF_REPORT_REPORT_ASSETS_H

extern const char df__report_asset_page_head[];  /* page.html up to the stylesheet */
extern const char df__report_asset_viewer_css[]; /* viewer.css */
extern const char df__report_asset_page_intro[]; /* page.html from the stylesheet to the summary cards */
extern const char df__report_asset_page_body[];  /* page.html from the summary cards to the data */
extern const char df__report_asset_viewer_js[];  /* viewer.js */
extern const char df__report_asset_diff_js[];    /* diff.js */

#endif
