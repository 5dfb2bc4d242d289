// Application Insights on a Log Analytics workspace, accepting only Entra ID-authenticated telemetry; the workspace
// also takes every resource's diagnostic settings, and a daily cap bounds what a burst of traffic or logs can cost.
param logAnalyticsName string
param applicationInsightsName string
param location string
param tags object = {}
@minValue(30)
@maxValue(730)
param retentionInDays int = 30
@description('Most GB the workspace ingests a day; past it, ingestion stops until the next day (UTC), alerts included.')
@minValue(1)
param dailyCapGb int = 2

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    retentionInDays: retentionInDays
    sku: {
      name: 'PerGB2018'
    }
    workspaceCapping: {
      dailyQuotaGb: dailyCapGb
    }
  }
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: applicationInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    // Ingestion needs an Entra ID token (Monitoring Metrics Publisher): the connection string alone sends nothing.
    DisableLocalAuth: true
  }
}

output applicationInsightsName string = applicationInsights.name
output applicationInsightsId string = applicationInsights.id
output logAnalyticsName string = workspace.name
output logAnalyticsId string = workspace.id
