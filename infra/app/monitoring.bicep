// Application Insights on a Log Analytics workspace, accepting only Entra ID-authenticated telemetry.
param logAnalyticsName string
param applicationInsightsName string
param location string
param tags object = {}
param retentionInDays int = 30

resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    retentionInDays: retentionInDays
    sku: {
      name: 'PerGB2018'
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
output logAnalyticsName string = workspace.name
