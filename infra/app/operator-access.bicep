// Read access for the people who run the service (operatorPrincipalId): with shared keys off, a storage account's data
// is readable only by a principal holding a data role, and nobody but the app did. They may read the index cache and,
// with refreshOnPublish, peek at the refresh queue, its poison queue and the dead-lettered events; nothing else, and
// nothing written.
@description('Object id of the user, group or service principal that operates the service.')
param principalId string
@allowed([
  'User'
  'Group'
  'ServicePrincipal'
])
param principalType string
param storageAccountName string
param cacheContainerName string
@description('refreshOnPublish: the refresh queue, its poison queue and the dead-letter container exist.')
param queues bool = false
@description('The refresh queue\'s own storage account (app/refresh-queue.bicep), which holds the queues and the dead letters.')
param refreshQueueAccountName string
param queueName string
param deadLetterContainerName string

// Storage Blob Data Reader: list and read blobs; scoped to the containers it names.
var storageBlobDataReader = '2a2b9908-6ea1-4ae2-8e65-a410df84e7d1' // Storage Blob Data Reader
// Storage Queue Data Reader: peek at messages and read queue properties; scoped to each queue.
var storageQueueDataReader = '19e7f393-937e-4f77-808e-94535e297925' // Storage Queue Data Reader

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' existing = {
  parent: storage
  name: 'default'
}

resource cacheContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: blobService
  name: cacheContainerName
}

resource refreshQueueAccount 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: refreshQueueAccountName
}

resource deadLetterBlobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' existing = {
  parent: refreshQueueAccount
  name: 'default'
}

resource deadLetterContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' existing = {
  parent: deadLetterBlobService
  name: deadLetterContainerName
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' existing = {
  parent: refreshQueueAccount
  name: 'default'
}

resource queue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' existing = {
  parent: queueService
  name: queueName
}

resource poisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' existing = {
  parent: queueService
  name: '${queueName}-poison'
}

// Storage Blob Data Reader on the index cache container
resource cacheReaderAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(cacheContainer.id, principalId, storageBlobDataReader)
  scope: cacheContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataReader)
    principalId: principalId
    principalType: principalType
  }
}

// Storage Blob Data Reader on the dead-letter container
resource deadLetterReaderAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (queues) {
  name: guid(deadLetterContainer.id, principalId, storageBlobDataReader)
  scope: deadLetterContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageBlobDataReader)
    principalId: principalId
    principalType: principalType
  }
}

// Storage Queue Data Reader on the refresh queue
resource queueReaderAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (queues) {
  name: guid(queue.id, principalId, storageQueueDataReader)
  scope: queue
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataReader)
    principalId: principalId
    principalType: principalType
  }
}

// Storage Queue Data Reader on the poison queue
resource poisonQueueReaderAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (queues) {
  name: guid(poisonQueue.id, principalId, storageQueueDataReader)
  scope: poisonQueue
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataReader)
    principalId: principalId
    principalType: principalType
  }
}
