// What the documentation's owners read of usage insights (#57; docs/operations.md, "Usage insights workbook"): a
// shared workbook on the Application Insights component charting the app's smithy.docs.usage.* counters: searches per
// day by outcome, the share no page answered (empty or floored) per site and version, pages read per site, feedback by
// site and kind, and the usage events the app dropped. Counts only: the counters carry a site, a version and
// enumerated outcomes, kinds and reasons, never a question or any other text, and so does every query here (they read
// customMetrics through the component, as app/alerts.bicep does). The questions are read in the app's own insights
// report (GET /api/admin/insights), never in telemetry. The workbook itself is insights-workbook.json (Notebook/1.0),
// which tests/infra/test_insights_workbook.py holds to those counters and their attributes.
param location string
param tags object = {}
param applicationInsightsName string

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

// A workbook's name must be a GUID: derived from the component, every deployment updates the same workbook instead of
// adding a copy. Its display name must be unique in the subscription, hence the component's (the token's) in it.
resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(applicationInsights.id, 'usage-insights-workbook')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: 'Documentation usage insights (${applicationInsightsName})'
    description: 'Counts of searches, reads, feedback and dropped usage events (smithy.docs.usage.*); never any text.'
    category: 'workbook'
    // Listed in the component's Workbooks, and its queries run there.
    sourceId: applicationInsights.id
    // Opened from anywhere else (Azure Monitor, Workbooks), its queries still go to the component.
    serializedData: string(union(loadJsonContent('insights-workbook.json'), {
      fallbackResourceIds: [
        applicationInsights.id
      ]
    }))
  }
}

output id string = workbook.id
output name string = workbook.name
