// What the docs account's Event Grid system topic may do in the host storage: put messages on the refresh queue,
// nothing else (no reading, no other queue, no blobs).
@description('Principal (object) id of the system topic\'s system-assigned identity (app/docs-events.bicep).')
param principalId string
param storageAccountName string
param queueName string

// Storage Queue Data Message Sender: add messages to a queue, nothing else; scoped to the one queue.
var storageQueueDataMessageSender = 'c6a89b2d-59bc-44d0-9896-0f6e12d7b80a' // Storage Queue Data Message Sender

resource storage 'Microsoft.Storage/storageAccounts@2023-05-01' existing = {
  name: storageAccountName
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' existing = {
  parent: storage
  name: 'default'
}

resource queue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' existing = {
  parent: queueService
  name: queueName
}

// Storage Queue Data Message Sender on the refresh queue
resource storageQueueDataMessageSenderAssignment 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(queue.id, principalId, storageQueueDataMessageSender)
  scope: queue
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', storageQueueDataMessageSender)
    principalId: principalId
    principalType: 'ServicePrincipal'
  }
}
