// The Event Grid system topic of the storage account the documentation is published to, deployed into that account's
// resource group and region. Its system-assigned identity delivers the events and writes the dead letters
// (app/docs-events-access.bicep gives it the right to), the only identity Event Grid may use behind a storage firewall.
param name string
param tags object = {}
@description('The existing storage account the documentation is published to (the events\' source), in this resource group.')
param storageAccountName string
@description('Log Analytics workspace the topic\'s delivery failures (AegDeliveryFailureLogs) go to.')
param logAnalyticsWorkspaceId string

resource docs 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

// A regional source's system topic lives in the source's region.
resource topic 'Microsoft.EventGrid/systemTopics@2025-02-15' = {
  name: name
  location: docs.location
  tags: tags
  identity: {
    type: 'SystemAssigned'
  }
  properties: {
    source: docs.id
    topicType: 'Microsoft.Storage.StorageAccounts'
  }
}

// Each failed delivery with its reason (a refused identity, a missing queue, the firewall), in the table the operators
// query, AegDeliveryFailureLogs: a diagnostic setting without a destination type writes to AzureDiagnostics instead,
// and Dedicated is what names the resource-specific table (Microsoft Learn, diagnostic settings'
// logAnalyticsDestinationType; "Supported logs for Microsoft.EventGrid/systemTopics").
resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: topic
  properties: {
    workspaceId: logAnalyticsWorkspaceId
    logAnalyticsDestinationType: 'Dedicated'
    logs: [
      {
        category: 'DeliveryFailures'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'AllMetrics'
        enabled: true
      }
    ]
  }
}

output name string = topic.name
output id string = topic.id
output principalId string = topic.identity.principalId
