// What the app's identity may do in its own resource group: use the host storage, read the refresh queue and publish
// telemetry.
@description('Principal (object) id of the app\'s user-assigned identity.')
param principalId string
param storageAccountName string
param applicationInsightsName string
@description('refreshOnPublish: the queue trigger reads the refresh queue in its own account (app/refresh-queue.bicep).')
param refreshQueue bool = false
@description('The refresh queue\'s storage account; named whether or not it is deployed, used only with refreshQueue.')
param refreshQueueAccountName string

// Storage Blob Data Owner: the host's own blobs (keys, timer locks and schedules), the deployment package and the
// index cache container all live in this account. Owner, not Contributor, is what the Functions host requires
// for AzureWebJobsStorage; it covers the cache container, so the cache needs no assignment of its own.
var storageBlobDataOwner = 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b' // Storage Blob Data Owner
// Storage Queue Data Contributor: with refreshOnPublish, the queue trigger reads and deletes the refresh queue's
// messages and moves one that keeps failing to its poison queue, which it creates: more than Message Processor. On the
// refresh queue's account, which holds nothing but those queues and the dead letters.
var storageQueueDataContributor = '974c5e8b-45b9-4653-ba55-5f855dd0fb88' // Storage Queue Data Contributor
// Monitoring Metrics Publisher: Application Insights accepts only Entra ID-authenticated telemetry.
var monitoringMetricsPublisher = '3913510d-42f4-4e42-8a64-420c390055eb' // Monitoring Metrics Publisher

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource refreshQueueAccount 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: refreshQueueAccountName
}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

// Storage Blob Data Owner on the host storage account
resource storageBlobDataOwnerAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(storage.id, principalId, storageBlobDataOwner)
  scope: storage
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataOwner)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

// Storage Queue Data Contributor on the refresh queue's storage account
resource storageQueueDataContributorAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (refreshQueue) {
  name: guid(refreshQueueAccount.id, principalId, storageQueueDataContributor)
  scope: refreshQueueAccount
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataContributor)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}

// Monitoring Metrics Publisher on Application Insights
resource monitoringMetricsPublisherAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(applicationInsights.id, principalId, monitoringMetricsPublisher)
  scope: applicationInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringMetricsPublisher)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}
